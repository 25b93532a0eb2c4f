package main

import (
	"fmt"
	"os"
	"strconv"
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
	return statCPU(pid, false).Seconds(), (statCPU(pid, true) - statCPU(pid, false)).Seconds()
}

func (m *treeMeter) sample(initial bool) {
	children := map[int][]int{}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(p); ok {
			children[st] = append(children[st], p)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	queue := []int{m.root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		own, cut := ownAndCut(p)
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

// procStat is the parent pid of pid.
func procStat(pid int) (ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	var state string
	_, err = fmt.Sscan(string(b[i+1:]), &state, &ppid)
	return ppid, err == nil
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
