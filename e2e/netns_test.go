package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// netLab places a test's processes on hosts of their own: a Linux network
// namespace per role, each with a veth pair whose other end is on a
// bridge the lab makes in the root namespace, on a private /24. The test
// itself (its browser, its HTTP clients) reaches them through the
// bridge's address. Where namespaces cannot be made (not root, no
// iproute2, ip failing) every host is 127.0.0.1 and the lab says so.
type netLab struct {
	// loopback, when not empty, says why the hosts are all 127.0.0.1.
	loopback string
	// root is where the test runs: the bridge's address, or loopback.
	root  *netHost
	hosts map[string]*netHost
}

// netHost is one place a process runs: a namespace and its address.
type netHost struct {
	role string
	// ns is the network namespace's name; empty: the root namespace.
	ns string
	ip string
	// port is the last port addr handed out in a namespace: a new
	// namespace has every port free, so a counter is enough.
	port int
}

// loopback is the host of tests that run everything on 127.0.0.1.
var loopback = &netHost{role: "loopback", ip: "127.0.0.1"}

// netLabOff turns the namespaces off, to run a lab's test on loopback.
const netLabOff = "BRAID_E2E_NETNS"

// netnsPrefix starts the name of every namespace and interface a lab
// makes, followed by the test process's pid, so that a lab left behind by
// a killed run is recognized (and removed) by the next one.
const netnsPrefix = "brdnt"

// labName matches the names of a lab's namespaces (brdnt<pid>-<role>) and
// interfaces (brdnt<pid>b, the bridge; brdnt<pid>v<n>, a veth).
var labName = regexp.MustCompile(`^` + netnsPrefix + `([0-9]+)(-|b$|v[0-9]+$)`)

// newNetLab makes a host for each role, in namespaces unless they cannot
// be made, and removes them all when the test ends.
func newNetLab(t *testing.T, roles ...string) *netLab {
	t.Helper()
	lab, err := makeNetLab(t, roles)
	if err == nil {
		t.Logf("network namespaces: %s", lab)
		return lab
	}
	lab = &netLab{loopback: err.Error(), root: loopback, hosts: map[string]*netHost{}}
	for _, r := range roles {
		lab.hosts[r] = loopback
	}
	t.Logf("network namespaces unavailable (%s): running on loopback", err)
	return lab
}

// host is the role's host.
func (l *netLab) host(role string) *netHost {
	h, ok := l.hosts[role]
	if !ok {
		panic(fmt.Sprintf("netLab: no host for role %q", role))
	}
	return h
}

func (l *netLab) String() string {
	if l.loopback != "" {
		return "loopback (" + l.loopback + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "test on %s", l.root.ip)
	for _, h := range l.hosts {
		fmt.Fprintf(&b, ", %s in %s on %s", h.role, h.ns, h.ip)
	}
	return b.String()
}

// addr is a free host:port on the host.
func (h *netHost) addr(t *testing.T) string {
	t.Helper()
	if h.ns == "" {
		if h.ip != loopback.ip {
			// The test's own address on the bridge, where only
			// clients run.
			t.Fatalf("netHost: no ports handed out on the test's own address %s", h.ip)
		}
		return freePort(t)
	}
	if h.port == 0 {
		h.port = 9000
	}
	h.port++
	return net.JoinHostPort(h.ip, strconv.Itoa(h.port))
}

// command runs bin in the host's namespace. `ip netns exec` execs bin,
// so the process's pid is the command's: a signal reaches bin itself.
func (h *netHost) command(bin string, args ...string) *exec.Cmd {
	if h.ns == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", h.ns, bin}, args...)...)
}

// makeNetLab makes the bridge and the namespaces, or says why it cannot;
// what it made is removed when the test ends, or at once on an error.
func makeNetLab(t *testing.T, roles []string) (*netLab, error) {
	if v := os.Getenv(netLabOff); v == "off" {
		return nil, fmt.Errorf("%s=off", netLabOff)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("not root (uid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("ip not found: scripts/install-deps.sh installs iproute2")
	}
	if len(roles) > 200 {
		return nil, fmt.Errorf("%d roles do not fit a /24", len(roles))
	}
	removeLeftovers(t)
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	run := netnsPrefix + strconv.Itoa(os.Getpid())
	bridge := run + "b"
	lab := &netLab{root: &netHost{role: "test", ip: subnet + ".1"}, hosts: map[string]*netHost{}}
	var veths, spaces []string
	undo := func() {
		// A namespace's removal takes its veth pair along, but later,
		// in the kernel's own time: deleting the pair is done at once.
		for _, v := range veths {
			_ = ipRun("link", "del", v)
		}
		for _, ns := range spaces {
			_ = ipRun("netns", "del", ns)
		}
		_ = ipRun("link", "del", bridge)
	}
	t.Cleanup(undo)
	steps := [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", lab.root.ip + "/24", "dev", bridge},
		{"link", "set", bridge, "up"},
	}
	for i, role := range roles {
		h := &netHost{role: role, ns: run + "-" + role, ip: fmt.Sprintf("%s.%d", subnet, 10+i)}
		lab.hosts[role] = h
		veth := fmt.Sprintf("%sv%d", run, i)
		spaces, veths = append(spaces, h.ns), append(veths, veth)
		steps = append(steps,
			[]string{"netns", "add", h.ns},
			// The namespace's end is eth0.
			[]string{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
			[]string{"link", "set", veth, "master", bridge, "up"},
			[]string{"-n", h.ns, "addr", "add", h.ip + "/24", "dev", "eth0"},
			[]string{"-n", h.ns, "link", "set", "eth0", "up"},
			[]string{"-n", h.ns, "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := ipRun(s...); err != nil {
			undo()
			return nil, err
		}
	}
	return lab, nil
}

// ipRun runs `ip args...`; its error carries ip's own message.
func ipRun(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeLeftovers removes the namespaces and bridges of labs whose test
// process is gone (killed before its cleanup ran). A lab of a test that
// still runs, in another package or worktree, is left alone.
func removeLeftovers(t *testing.T) {
	objs, err := labObjects()
	if err != nil {
		t.Logf("looking for what killed runs left: %v", err)
		return
	}
	for _, o := range objs {
		if o.pid == os.Getpid() || !errors.Is(syscall.Kill(o.pid, 0), syscall.ESRCH) {
			continue
		}
		if o.kind == "link" {
			err = ipRun("link", "del", o.name)
		} else {
			killIn(o.name)
			err = ipRun("netns", "del", o.name)
		}
		if err != nil {
			t.Logf("removing the %s %s a killed run left: %v", o.kind, o.name, err)
		} else {
			t.Logf("removed the %s %s a killed run left", o.kind, o.name)
		}
	}
}

// labObject is a link or a namespace of a lab, and the pid of its test.
type labObject struct {
	kind, name string
	pid        int
}

// labObjects lists the links and then the namespaces of every lab: a
// veth deleted is gone at once, one whose namespace is deleted only later.
func labObjects() ([]labObject, error) {
	var objs []labObject
	for _, kind := range []string{"link", "namespace"} {
		args := []string{"-o", "link", "show"}
		if kind == "namespace" {
			args = []string{"netns", "list"}
		}
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			return nil, fmt.Errorf("listing with ip %s: %w", strings.Join(args, " "), err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && kind == "link" {
				// "12: brdnt123b: <BROADCAST,...", "13: brdnt123v0@if2: ..."
				f[0], _, _ = strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			}
			if len(f) == 0 {
				continue
			}
			if m := labName.FindStringSubmatch(f[0]); m != nil {
				pid, err := strconv.Atoi(m[1])
				if err == nil {
					objs = append(objs, labObject{kind: kind, name: f[0], pid: pid})
				}
			}
		}
	}
	return objs, nil
}

// killIn kills the processes left in a namespace: a killed test's
// children outlive it, and would keep the namespace (and its ports) alive.
func killIn(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// freeSubnet picks 10.213.X (a /24) that no route of any table and no
// address of the root namespace overlaps.
func freeSubnet() (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return "", fmt.Errorf("listing routes: %w", err)
	}
	var taken []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		if n := routePrefix(line); n != nil {
			taken = append(taken, n)
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				taken = append(taken, n)
			}
		}
	}
	for range 50 {
		s := fmt.Sprintf("10.213.%d", 1+rand.IntN(254))
		_, cand, _ := net.ParseCIDR(s + ".0/24")
		free := true
		for _, n := range taken {
			if n.Contains(cand.IP) || cand.Contains(n.IP) {
				free = false
				break
			}
		}
		if free {
			return s, nil
		}
	}
	return "", errors.New("no free 10.213.X.0/24: routes cover all that were tried")
}

// routePrefix is the destination of a line of `ip -o route show`, but
// the default route, which covers everything and is not in the way.
func routePrefix(line string) *net.IPNet {
	f := strings.Fields(line)
	if len(f) > 1 {
		switch f[0] {
		case "unicast", "local", "broadcast", "multicast", "throw", "unreachable", "prohibit", "blackhole", "nat", "anycast":
			f = f[1:]
		}
	}
	if len(f) == 0 || f[0] == "default" {
		return nil
	}
	dst := f[0]
	if !strings.Contains(dst, "/") {
		dst += "/32"
	}
	_, n, err := net.ParseCIDR(dst)
	if err != nil {
		return nil
	}
	return n
}
