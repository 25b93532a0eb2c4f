package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// treeMeter counts the CPU of a process tree over a measurement, also
// when a browser of it restarts: a browser killed mid-run leaves its
// renderers orphaned (their time never reaches anyone's cutime) and a
// reaped browser's time would otherwise leave the tree's reading. It
// samples every process of the tree (own utime+stime, by pid) every
// interval and keeps the last value it saw of each, so a process that
// exits loses at most its last interval. Processes too short-lived to be
// sampled (qpdf run by Gotenberg, a test's helper) reach the root's
// cutime when the root waits for them: that delta is counted, less what
// the sampled processes it reaped already gave.
type treeMeter struct {
	root     int
	mu       sync.Mutex
	first    map[int]float64 // own CPU s when first seen (0 if started during the measurement)
	last     map[int]float64
	lastCut  map[int]float64 // cutime of a direct child of root, last seen
	parent   map[int]int
	rootCut0 float64
	stop     chan struct{}
	done     chan struct{}
}

func startTreeMeter(root int, every time.Duration) *treeMeter {
	m := &treeMeter{root: root, first: map[int]float64{}, last: map[int]float64{}, lastCut: map[int]float64{}, parent: map[int]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	_, m.rootCut0 = ownAndCut(root)
	m.sample(true)
	go func() {
		defer close(m.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample(false)
			}
		}
	}()
	return m
}

func ownAndCut(pid int) (own, cut float64) {
	st, _ := readStat(pid)
	return st.own, st.cut
}

// procCPU is what treeMeter reads of a process: its parent and its CPU
// seconds, its own and its waited-for children's.
type procCPU struct {
	ppid     int
	own, cut float64
}

// readStat reads /proc/PID/stat once.
func readStat(pid int) (procCPU, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procCPU{}, false
	}
	closing := bytes.LastIndexByte(b, ')')
	if closing < 0 {
		return procCPU{}, false
	}
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 15 {
		return procCPU{}, false
	}
	tick := func(i int) float64 {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return float64(v) / 100 // USER_HZ
	}
	ppid, _ := strconv.Atoi(f[1])
	return procCPU{ppid: ppid, own: tick(11) + tick(12), cut: tick(13) + tick(14)}, true
}

func (m *treeMeter) sample(initial bool) {
	children := map[int][]int{}
	stats := map[int]procCPU{}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(p); ok {
			children[st.ppid] = append(children[st.ppid], p)
			stats[p] = st
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	queue := []int{m.root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		own, cut := stats[p].own, stats[p].cut
		if _, seen := m.first[p]; !seen {
			m.first[p] = 0
			if initial || p == m.root {
				m.first[p] = own
			}
		}
		m.last[p] = own
		for _, c := range children[p] {
			m.parent[c] = p
			queue = append(queue, c)
		}
		if m.parent[p] == m.root && p != m.root {
			m.lastCut[p] = cut
		}
	}
}

// seconds ends the measurement and returns the tree's CPU seconds.
func (m *treeMeter) seconds() float64 {
	close(m.stop)
	<-m.done
	return m.now()
}

// now samples the tree and returns its CPU seconds so far.
func (m *treeMeter) now() float64 {
	m.sample(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum float64
	for p, v := range m.last {
		sum += v - m.first[p]
	}
	_, rootCut := ownAndCut(m.root)
	reaped := rootCut - m.rootCut0
	for c, cut := range m.lastCut {
		if _, err := os.Stat("/proc/" + strconv.Itoa(c)); err != nil || m.parent[c] != m.root {
			reaped -= m.last[c] + cut // sampled already: its own time above, its children's each
		}
	}
	return sum + max(reaped, 0)
}

// treeMeterEvery is how often a treeMeter samples during a row.
const treeMeterEvery = 50 * time.Millisecond
