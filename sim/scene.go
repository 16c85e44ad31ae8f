package sim

// The fixed scene, in the world frame (metres; x points from the robot's
// start towards the counter, y to the left, z up from the floor).
//
// A counter (a cabinet with a worktop) stands at x ∈ [CounterFront,
// counterBack], y ∈ [-counterHalfWidth, counterHalfWidth]; its worktop is at
// z = TableHeight. Two drawers (top and bottom) sit in its front face around
// y = 0 and slide out towards -x. A wall stands behind the counter.
const (
	// TableHeight is the height of the worktop objects stand on.
	TableHeight = 0.80
	// CounterFront is the x of the counter's front face (the drawer fronts).
	CounterFront     = 0.55
	counterBack      = 1.15
	counterHalfWidth = 0.60
	wallX            = 1.60

	// MaxDrawerOpen is how far a drawer slides out.
	MaxDrawerOpen     = 0.25
	drawerHalfWidth   = 0.22
	drawerPanel       = 0.02 // front panel thickness
	handleOut         = 0.03 // handle bar in front of the panel
	handleHalfLength  = 0.07
	drawerTopZ0       = 0.56
	drawerTopZ1       = 0.76
	drawerBottomZ0    = 0.32
	drawerBottomZ1    = 0.52
	handleGraspRadius = 0.03 // end-effector to the handle bar for a grasp
	handleSlipZ       = 0.04 // a held handle slips when the end-effector leaves it by more
	handleSlipY       = 0.10
)

// Drawer indices.
const (
	DrawerTop    = 0
	DrawerBottom = 1
	NumDrawers   = 2
)

// drawerZ returns the bottom and top z of drawer i's front.
func drawerZ(i int) (z0, z1 float64) {
	if i == DrawerTop {
		return drawerTopZ0, drawerTopZ1
	}
	return drawerBottomZ0, drawerBottomZ1
}

// handlePos returns the centre of drawer i's handle bar when it is open by d.
func handlePos(i int, d float64) Vec3 {
	z0, z1 := drawerZ(i)
	return Vec3{CounterFront - d - handleOut, 0, (z0 + z1) / 2}
}

// onCounter reports whether (x, y) lies over the worktop.
func onCounter(x, y float64) bool {
	return x >= CounterFront && x <= counterBack && y >= -counterHalfWidth && y <= counterHalfWidth
}

// surfaceZ returns the height of the surface under (x, y): the worktop or
// the floor.
func surfaceZ(x, y float64) float64 {
	if onCounter(x, y) {
		return TableHeight
	}
	return 0
}

// Where objects are placed at the start of an episode (world x, y).
const (
	spawnX0, spawnX1 = 0.66, 1.04
	spawnY0, spawnY1 = -0.42, 0.42
)
