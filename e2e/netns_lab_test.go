package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNetLab checks the lab itself where namespaces can be made: it
// removes what a killed run left but not what a running one holds, a
// process in one namespace reaches one in another and the test reaches
// both (through the bridge, which the host's netfilter could drop), and
// nothing of the lab is left when its test ends.
func TestNetLab(t *testing.T) {
	if os.Getenv(netLabOff) == "off" || os.Geteuid() != 0 {
		t.Skip("network namespaces are off or need root: a lab runs on loopback")
	}
	dead, live := exitedPID(t), os.Getppid()
	gone := fmt.Sprintf("%s%d", netnsPrefix, dead)
	alive := fmt.Sprintf("%s%d", netnsPrefix, live)
	for _, s := range [][]string{{"netns", "add", gone + "-x"}, {"link", "add", gone + "b", "type", "bridge"}, {"netns", "add", alive + "-x"}} {
		if err := ipRun(s...); err != nil {
			t.Skipf("network namespaces cannot be made here (%v): a lab runs on loopback", err)
		}
	}
	t.Cleanup(func() {
		_ = ipRun("netns", "del", alive+"-x")
		// Removed by the lab unless it failed to.
		_ = ipRun("netns", "del", gone+"-x")
		_ = ipRun("link", "del", gone+"b")
	})

	t.Run("lab", func(t *testing.T) {
		lab := newNetLab(t, "a", "b")
		if lab.loopback != "" {
			t.Fatalf("the lab fell back to loopback where namespaces could be made: %s", lab.loopback)
		}
		if names := labNames(t, dead); len(names) > 0 {
			t.Errorf("what a killed run left is still there: %v", names)
		}
		if names := labNames(t, live); len(names) != 1 {
			t.Errorf("the namespace of a run that still runs was removed: %v", names)
		}
		a := lab.host("a")
		addr := a.addr(t)
		helperOn(t, a, "listen", addr)
		if got := helperOn(t, lab.host("b"), "dial", addr); !strings.Contains(got, "hello") {
			t.Errorf("b dialing a at %s read %q", addr, got)
		}
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("the test dialing a at %s: %v", addr, err)
		}
		conn.Close()
	})
	if names := labNames(t, os.Getpid()); len(names) > 0 {
		t.Errorf("the lab left %v behind", names)
	}
}

// TestNetLabHelper is the process TestNetLab runs in a namespace, with
// BRAID_NETLAB_HELPER=listen|dial and BRAID_NETLAB_ADDR: a listener that
// greets two connections (the other namespace's, the test's), or a dialer
// that prints the greeting. Run alone it does nothing.
func TestNetLabHelper(t *testing.T) {
	addr := os.Getenv("BRAID_NETLAB_ADDR")
	switch os.Getenv("BRAID_NETLAB_HELPER") {
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("listening")
		for range 2 {
			c, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(c, "hello")
			c.Close()
		}
	case "dial":
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Print(line)
	}
}

// helperOn runs TestNetLabHelper on host: a listener until the test ends,
// once it listens; a dialer to its end, returning its output.
func helperOn(t *testing.T, host *netHost, mode, addr string) string {
	t.Helper()
	cmd := host.command(os.Args[0], "-test.run=^TestNetLabHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "BRAID_NETLAB_HELPER="+mode, "BRAID_NETLAB_ADDR="+addr)
	if mode == "dial" {
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dialing %s from %s: %v\n%s", addr, host.ns, err, out)
		}
		return string(out)
	}
	startSaying(t, cmd, "listening")
	return ""
}

// exitedPID is the pid of a process that has ended.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// labNames lists the namespaces and links of the lab of the test process
// pid.
func labNames(t *testing.T, pid int) []string {
	t.Helper()
	objs, err := labObjects()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		if o.pid == pid {
			names = append(names, o.name)
		}
	}
	return names
}
