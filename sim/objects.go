package sim

import "math"

// Kind names one of the objects the simulator knows.
type Kind uint8

// The object catalogue.
const (
	CokeCan Kind = iota
	PepsiCan
	SevenUpCan
	WaterBottle
	JuiceBottle
	Sponge
	Apple
	ChipBag
	numKinds
)

// Shape is an object's geometry.
type Shape uint8

const (
	// Cylinder: Radius, Height; a can.
	Cylinder Shape = iota
	// Bottle: a cylinder of Radius and Height whose top capHeight is a narrow
	// neck in CapColor.
	Bottle
	// Box: Size (length along its yaw, width, height); a sponge, a chip bag.
	Box
	// Sphere: Radius; an apple.
	Sphere
)

// RGB is a colour, 8 bits per channel.
type RGB [3]uint8

// KindInfo describes a kind of object.
type KindInfo struct {
	Name     string
	Shape    Shape
	Radius   float64 // Cylinder, Bottle, Sphere
	Height   float64 // Cylinder, Bottle
	Size     Vec3    // Box
	Color    RGB
	CapColor RGB // the top of a can, the cap of a bottle
	// Tippable objects stand upright and can be knocked over; the others
	// are pushed when the end-effector runs into them.
	Tippable bool
}

const capHeight = 0.045 // bottle neck and cap

var catalogue = [numKinds]KindInfo{
	CokeCan:     {Name: "coke can", Shape: Cylinder, Radius: 0.033, Height: 0.122, Color: RGB{210, 25, 30}, CapColor: RGB{200, 200, 205}, Tippable: true},
	PepsiCan:    {Name: "pepsi can", Shape: Cylinder, Radius: 0.033, Height: 0.122, Color: RGB{25, 60, 200}, CapColor: RGB{200, 200, 205}, Tippable: true},
	SevenUpCan:  {Name: "7up can", Shape: Cylinder, Radius: 0.033, Height: 0.122, Color: RGB{35, 160, 60}, CapColor: RGB{200, 200, 205}, Tippable: true},
	WaterBottle: {Name: "water bottle", Shape: Bottle, Radius: 0.035, Height: 0.22, Color: RGB{150, 210, 245}, CapColor: RGB{250, 250, 250}, Tippable: true},
	JuiceBottle: {Name: "juice bottle", Shape: Bottle, Radius: 0.035, Height: 0.20, Color: RGB{245, 135, 20}, CapColor: RGB{30, 110, 30}, Tippable: true},
	Sponge:      {Name: "sponge", Shape: Box, Size: Vec3{0.10, 0.07, 0.04}, Color: RGB{245, 220, 40}},
	Apple:       {Name: "apple", Shape: Sphere, Radius: 0.04, Color: RGB{170, 20, 50}, CapColor: RGB{90, 60, 20}},
	ChipBag:     {Name: "chip bag", Shape: Box, Size: Vec3{0.16, 0.11, 0.05}, Color: RGB{125, 60, 165}},
}

// Info returns the description of kind k.
func (k Kind) Info() KindInfo {
	if k >= numKinds {
		return KindInfo{Name: "unknown"}
	}
	return catalogue[k]
}

func (k Kind) String() string { return k.Info().Name }

// Kinds returns every kind of object, in catalogue order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// halfHeight returns half the vertical extent of an object of kind k,
// upright or fallen.
func halfHeight(k Kind, fallen bool) float64 {
	c := &catalogue[k]
	switch c.Shape {
	case Box:
		return c.Size[2] / 2
	case Sphere:
		return c.Radius
	}
	if fallen {
		return c.Radius
	}
	return c.Height / 2
}

// bodyRadius returns the radius of the vertical cylinder that bounds an
// upright object (its footprint).
func bodyRadius(k Kind) float64 {
	c := &catalogue[k]
	if c.Shape == Box {
		return math.Hypot(c.Size[0], c.Size[1]) / 2
	}
	return c.Radius
}

// footprint returns the radius of the circle that bounds an object on the
// table, upright or fallen.
func footprint(k Kind, fallen bool) float64 {
	c := &catalogue[k]
	if fallen && (c.Shape == Cylinder || c.Shape == Bottle) {
		return c.Height / 2
	}
	return bodyRadius(k)
}
