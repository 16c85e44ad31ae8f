module github.com/ttmrobot/ttm

go 1.26

require (
	github.com/bluenviron/goroslib/v2 v2.1.5
	github.com/hashicorp/go-hclog v1.6.3
	gocv.io/x/gocv v0.31.0
	golang.org/x/sys v0.18.0
	golang.org/x/text v0.28.0
	gonum.org/v1/gonum v0.17.0
	gonum.org/v1/netlib v0.0.0-20230729102104-8b8060e7531f
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/gookit/color v1.5.4 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/xo/terminfo v0.0.0-20210125001918-ca9a967f8778 // indirect
)
