package prober

import "sync"

// pool runs probes on at most max goroutines. submit never blocks: work
// waits in a FIFO and runner goroutines exist only while there is work, so
// an idle engine holds no runner goroutines at all.
type pool struct {
	mu     sync.Mutex
	queue  []*worker
	head   int
	active int
	max    int
	run    func(*worker)
	wg     sync.WaitGroup
}

func newPool(max int, run func(*worker)) *pool {
	return &pool{max: max, run: run}
}

// submit queues w and starts a runner if fewer than max are busy.
func (p *pool) submit(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, w)
	if p.active < p.max {
		p.active++
		p.wg.Add(1)
		go p.loop()
	}
}

// loop runs queued work until the queue is empty.
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

// next pops the oldest queued worker, or retires the runner when none is left.
func (p *pool) next() (*worker, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head == len(p.queue) {
		p.active--
		p.queue, p.head = p.queue[:0], 0
		return nil, false
	}
	w := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	return w, true
}

// wait blocks until every runner has retired.
func (p *pool) wait() { p.wg.Wait() }
