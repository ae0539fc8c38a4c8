package prober

import "sync"

// pool runs probes on at most max goroutines. submit never blocks: work
// waits in a FIFO. Runners are started on demand and then park between
// bursts, so a busy engine neither creates goroutines nor regrows their
// stacks per probe; at most max goroutines ever exist, whatever the number
// of probes.
type pool struct {
	mu     sync.Mutex
	work   sync.Cond
	queue  []*worker
	head   int
	active int // runners started
	idle   int // runners parked
	max    int
	closed bool
	run    func(*worker)
	wg     sync.WaitGroup
}

func newPool(max int, run func(*worker)) *pool {
	p := &pool{max: max, run: run}
	p.work.L = &p.mu
	return p
}

// submit queues w for a runner: a parked one, or a new one while fewer
// than max exist.
func (p *pool) submit(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, w)
	switch {
	case p.idle > 0:
		p.work.Signal()
	case p.active < p.max:
		p.active++
		p.wg.Add(1)
		go p.loop()
	}
}

// loop runs queued work until the pool closes.
func (p *pool) loop() {
	defer p.wg.Done()
	for {
		w, ok := p.next()
		if !ok {
			return
		}
		p.run(w)
	}
}

// next pops the oldest queued worker, parking while there is none; it
// returns false once the pool is closed and drained.
func (p *pool) next() (*worker, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
		if p.closed {
			p.active--
			return nil, false
		}
		p.idle++
		p.work.Wait()
		p.idle--
	}
	w := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	return w, true
}

// runners reports how many runner goroutines exist: the most probes that
// ran at once so far, at most max (parked runners are kept, not retired).
func (p *pool) runners() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active
}

// close lets the runners finish the queued work and exit, and waits for them.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.work.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
