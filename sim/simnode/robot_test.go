package simnode

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/geometry_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/tf2_msgs"

	"github.com/ttmrobot/ttm/internal/nodetest"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/sim"
)

// sim's bags repeat internal/ros's topic names; they must agree.
func TestRobotTopicsAgree(t *testing.T) {
	for _, tc := range []struct{ sim, ros any }{
		{sim.DefaultTopics().TF, ros.TopicTF}, {sim.DefaultTopics().TFStatic, ros.TopicTFStatic},
		{sim.DefaultTopics().JointStates, ros.TopicJointStates}, {sim.DefaultTopics().CameraInfo, ros.TopicCameraInfo},
	} {
		if fmt.Sprint(tc.sim) != fmt.Sprint(tc.ros) {
			t.Errorf("sim has %v, internal/ros %v", tc.sim, tc.ros)
		}
	}
}

// tfPose is a rigid transform: p_parent = rot(q, p_child) + tr.
type tfPose struct {
	tr sim.Vec3
	q  [4]float64 // x, y, z, w
}

func poseOf(m geometry_msgs.Transform) tfPose {
	return tfPose{sim.Vec3{m.Translation.X, m.Translation.Y, m.Translation.Z}, [4]float64{m.Rotation.X, m.Rotation.Y, m.Rotation.Z, m.Rotation.W}}
}

// rot applies the unit quaternion q to v: v + 2w(u×v) + 2u×(u×v).
func rot(q [4]float64, v sim.Vec3) sim.Vec3 {
	u := sim.Vec3{q[0], q[1], q[2]}
	c := u.Cross(v).Scale(2)
	return v.Add(c.Scale(q[3])).Add(u.Cross(c))
}

func (p tfPose) toParent(v sim.Vec3) sim.Vec3 { return rot(p.q, v).Add(p.tr) }

func (p tfPose) toChild(v sim.Vec3) sim.Vec3 {
	return rot([4]float64{-p.q[0], -p.q[1], -p.q[2], p.q[3]}, v.Sub(p.tr))
}

// robotTopics collects what the simulator node publishes of the robot.
type robotTopics struct {
	mu     sync.Mutex // mu guards the fields below
	images map[time.Time]*sensor_msgs.Image
	infos  map[time.Time]*sensor_msgs.CameraInfo
	joints map[time.Time]*sensor_msgs.JointState
	tf     map[time.Time][]geometry_msgs.TransformStamped
	static *tf2_msgs.TFMessage
	last   time.Time // the newest image's stamp
}

// frame returns the messages of the newest frame whose image, camera_info,
// tf and joint_states have all arrived.
func (r *robotTopics) frame() (*sensor_msgs.Image, *sensor_msgs.CameraInfo, *sensor_msgs.JointState, []geometry_msgs.TransformStamped, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.last
	img, info, js, tf := r.images[st], r.infos[st], r.joints[st], r.tf[st]
	if img == nil || info == nil || js == nil || len(tf) < 2 || r.static == nil {
		return nil, nil, nil, nil, fmt.Errorf("frame %v: image %v, camera_info %v, joint_states %v, %d transforms, static %v", st, img != nil, info != nil, js != nil, len(tf), r.static != nil)
	}
	return img, info, js, tf, nil
}

func subscribeRobot(t *testing.T, a *ros.Args) *robotTopics {
	t.Helper()
	r := &robotTopics{images: map[time.Time]*sensor_msgs.Image{}, infos: map[time.Time]*sensor_msgs.CameraInfo{},
		joints: map[time.Time]*sensor_msgs.JointState{}, tf: map[time.Time][]geometry_msgs.TransformStamped{}}
	names, err := a.ResolveNames([]string{ros.TopicImage, ros.TopicCameraInfo, ros.TopicTF, ros.TopicTFStatic, ros.TopicJointStates})
	if err != nil {
		t.Fatal(err)
	}
	var subs []*ros.Subscriber
	setup := func(n *ros.Node) error {
		for _, sc := range []struct {
			name string
			cb   any
		}{
			{ros.TopicImage, func(m *sensor_msgs.Image) {
				r.mu.Lock()
				r.images[m.Header.Stamp], r.last = m, m.Header.Stamp
				r.mu.Unlock()
			}},
			{ros.TopicCameraInfo, func(m *sensor_msgs.CameraInfo) { r.mu.Lock(); r.infos[m.Header.Stamp] = m; r.mu.Unlock() }},
			{ros.TopicJointStates, func(m *sensor_msgs.JointState) { r.mu.Lock(); r.joints[m.Header.Stamp] = m; r.mu.Unlock() }},
			{ros.TopicTF, func(m *tf2_msgs.TFMessage) {
				r.mu.Lock()
				for _, tr := range m.Transforms {
					r.tf[tr.Header.Stamp] = append(r.tf[tr.Header.Stamp], tr)
				}
				r.mu.Unlock()
			}},
			{ros.TopicTFStatic, func(m *tf2_msgs.TFMessage) { r.mu.Lock(); r.static = m; r.mu.Unlock() }},
		} {
			s, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: names[sc.name], Callback: sc.cb})
			if err != nil {
				return err
			}
			subs = append(subs, s)
		}
		return nil
	}
	teardown := func() {
		for _, s := range subs {
			s.Close()
		}
		subs = nil
	}
	sup, err := ros.NewSupervisor(t.Context(), ros.SupervisorConf{Args: a, Setup: setup, Teardown: teardown, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Close)
	return r
}

// TestNodePublishesRobot checks what the simulator node publishes of the
// robot, over Debian's roscore, against the simulator's state computed
// here independently: before and after a step, the hand composed from
// /tf_static and /tf is State.EE, a world point projected through the
// camera's tf and camera_info's K lands where sim.ImagePoint puts it, the
// finger joint maps back to Grip, and one frame's image, camera_info, tf
// and joint_states share one stamp.
func TestNodePublishesRobot(t *testing.T) {
	m := rostest.StartMaster(t)
	log, _ := rostest.Logger(t)
	const ns = "/robot"
	task, _ := sim.TaskByName("pick")
	const seed, h, w = 7, 48, 64
	s, err := Start(context.Background(), Config{Args: nodetest.Args(t, m, "ttm_sim", "__ns:="+ns), Tasks: []*sim.Task{task}, Seed: seed, Height: h, Width: w,
		ActionTimeout: 300 * time.Millisecond, EpisodeTimeout: 60 * time.Second, StartTimeout: 60 * time.Second, NoReset: true,
		Log: log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := subscribeRobot(t, nodetest.Args(t, m, "listener", "__ns:="+ns))

	ep, err := sim.NewEpisode(task, seed, sim.Options{Height: h, Width: w})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	act := []float32{1, 0.5, 0.2, -0.3, 0, 0, 0, 1, 0, 0, 0} // arm mode, close the gripper

	for _, tc := range []struct {
		name  string
		steps uint64
	}{{"first frame", 0}, {"after a step", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.steps == 1 {
				if _, err := ep.Step(act); err != nil {
					t.Fatal(err)
				}
				m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", ns+"/action", "std_msgs/Float32MultiArray", fmt.Sprintf("{data: %v}", floatList(act)))
			}
			var (
				img    *sensor_msgs.Image
				info   *sensor_msgs.CameraInfo
				joints *sensor_msgs.JointState
				tf     []geometry_msgs.TransformStamped
			)
			rostest.WaitFor(t, 20*time.Second, "a whole frame", func() error {
				if st := s.Stats(); st.Steps != tc.steps {
					return fmt.Errorf("%d steps", st.Steps)
				}
				var err error
				img, info, joints, tf, err = got.frame()
				return err
			})
			if img.Header.FrameId != robot.FrameCameraOptical || info.Header.FrameId != robot.FrameCameraOptical {
				t.Errorf("frame ids: image %q, camera_info %q, want %q", img.Header.FrameId, info.Header.FrameId, robot.FrameCameraOptical)
			}
			// Equal stamps: frame() found them all under the image's.
			st := ep.State()
			poses := map[[2]string]tfPose{}
			got.mu.Lock()
			for _, tr := range append(append([]geometry_msgs.TransformStamped(nil), got.static.Transforms...), tf...) {
				poses[[2]string{tr.Header.FrameId, tr.ChildFrameId}] = poseOf(tr.Transform)
			}
			got.mu.Unlock()
			pose := func(parent, child string) tfPose {
				p, ok := poses[[2]string{parent, child}]
				if !ok {
					t.Fatalf("no transform %s -> %s in %v", parent, child, poses)
				}
				return p
			}
			hand := pose(robot.FrameBase, robot.FrameArmMount).toParent(pose(robot.FrameArmMount, robot.FrameHand).toParent(sim.Vec3{}))
			if d := hand.Sub(st.EE).Norm(); d > 1e-6 {
				t.Errorf("hand from tf %v, State.EE %v", hand, st.EE)
			}
			odomBase, baseCam, camOpt := pose(robot.FrameOdom, robot.FrameBase), pose(robot.FrameBase, robot.FrameCamera), pose(robot.FrameCamera, robot.FrameCameraOptical)
			k := info.K
			for _, p := range []sim.Vec3{st.Objects[0].Pos, st.EEWorld(), st.ToWorld(sim.Vec3{1, 0.2, 0.8})} {
				q := camOpt.toChild(baseCam.toChild(odomBase.toChild(p)))
				u, v := k[0]*q[0]/q[2]+k[2], k[4]*q[1]/q[2]+k[5]
				wu, wv, ok := sim.ImagePoint(st, h, w, p)
				if !ok || math.Abs(u-wu) > 1e-6 || math.Abs(v-wv) > 1e-6 {
					t.Errorf("world point %v: (%v, %v) through tf and K, sim.ImagePoint (%v, %v, %v)", p, u, v, wu, wv, ok)
				}
			}
			if info.Width != w || info.Height != h || info.DistortionModel != "plumb_bob" || len(info.D) != 5 || info.R != [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1} ||
				info.P != [12]float64{k[0], 0, k[2], 0, 0, k[4], k[5], 0, 0, 0, 1, 0} {
				t.Errorf("camera_info %+v", info)
			}
			if len(joints.Name) != 1 || joints.Name[0] != robot.JointGripper || len(joints.Position) != 1 {
				t.Fatalf("joint_states %+v", joints)
			}
			grip := (joints.Position[0] - robot.GripperOpenPosition) / (robot.GripperClosedPosition - robot.GripperOpenPosition)
			if math.Abs(grip-st.Grip) > 1e-9 {
				t.Errorf("joint position %v gives grip %v, State.Grip %v", joints.Position[0], grip, st.Grip)
			}
			if tc.steps == 1 && st.Grip == 0 {
				t.Error("the step did not move the gripper: the test checks nothing")
			}
		})
	}
}

func floatList(a []float32) string {
	s := "["
	for i, v := range a {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(v)
	}
	return s + "]"
}
