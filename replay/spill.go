package replay

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
)

// Spill is a Sink that keeps a streamed replay's steps on disk, in a
// temporary file removed as soon as it is made (it lives while it is
// open, and nothing is left behind however Kavach ends). It keeps each
// step's replies and outcome, not its request or normalized output:
// whoever reads it back has the recording, and so the requests.
//
// Steps are encoded by a goroutine of the spill's, spillBatch at a time
// (or fewer, whose replies hold readBackBytes), while the replay goes
// on: encoding was about 2.5 µs of a distinct-millisecond replay's 50 µs
// step (perf), paid between a reply and the next request while the
// other core sat idle. At most two batches wait for it. A write's error
// is returned by a later Step, and by Steps.
type Spill struct {
	f   *os.File
	w   *bufio.Writer
	enc *gob.Encoder
	n   int

	batch []spilled
	size  int            // the batch's reply bytes
	work  chan []spilled // to the encoder; nil: none running
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error // the encoder's first error
}

// spillBatch is how many steps the encoder is given at a time.
const spillBatch = 256

// spilled is a step as a Spill stores it.
type spilled struct {
	N         int
	Conn      uint64
	Ran       bool
	Outcome   kavach.Outcome
	Responses [][]byte
	Virtual   time.Time
	Answered  time.Time
	// Inputs and InputsError are StepResult's (Options.Inputs).
	Inputs      map[string]string
	InputsError string
	Contained   string // StepResult's
	Foreign     bool   `json:",omitempty"`
}

// NewSpill makes an empty spill in dir ("" for the system's temporary
// directory).
func NewSpill(dir string) (*Spill, error) {
	f, err := os.CreateTemp(dir, "kavach-spill-")
	if err != nil {
		return nil, fmt.Errorf("replay: spill file: %w", err)
	}
	os.Remove(f.Name())
	s := &Spill{f: f}
	s.Restart()
	return s, nil
}

// Step writes s.
func (s *Spill) Step(st StepResult) error {
	if err := s.failed(); err != nil {
		return err
	}
	s.n++
	s.batch = append(s.batch, spilled{N: st.N, Conn: st.Conn, Ran: st.Ran, Outcome: st.Outcome, Responses: st.Responses, Virtual: st.Virtual, Answered: st.Answered,
		Inputs: st.Inputs, InputsError: st.InputsError, Contained: st.Contained, Foreign: st.Foreign})
	for _, r := range st.Responses {
		s.size += len(r)
	}
	if len(s.batch) == spillBatch || s.size >= readBackBytes {
		s.send()
	}
	return nil
}

// send hands the batch to the encoder, starting it if need be.
func (s *Spill) send() {
	if s.work == nil {
		s.work = make(chan []spilled, 2)
		s.wg.Add(1)
		go s.encode(s.work, s.enc)
	}
	s.work <- s.batch
	s.batch, s.size = make([]spilled, 0, spillBatch), 0
}

// encode writes the batches it is given until work closes; after an
// error it writes nothing more.
func (s *Spill) encode(work <-chan []spilled, enc *gob.Encoder) {
	defer s.wg.Done()
	var err error
	for b := range work {
		for i := 0; i < len(b) && err == nil; i++ {
			if err = enc.Encode(b[i]); err != nil {
				s.mu.Lock()
				s.err = fmt.Errorf("replay: spill: %w", err)
				s.mu.Unlock()
			}
		}
	}
}

func (s *Spill) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// flush waits until every step given has been written to the file.
func (s *Spill) flush() error {
	if len(s.batch) > 0 {
		s.send()
	}
	s.stop()
	if err := s.failed(); err != nil {
		return err
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("replay: spill: %w", err)
	}
	return nil
}

// Restart empties the spill.
func (s *Spill) Restart() {
	if s.w != nil {
		s.flush()
	}
	s.f.Truncate(0)
	s.f.Seek(0, io.SeekStart)
	s.w = bufio.NewWriterSize(s.f, 256<<10)
	s.enc = gob.NewEncoder(s.w)
	s.n = 0
	s.batch, s.size = make([]spilled, 0, spillBatch), 0
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
}

// Len is how many steps it holds.
func (s *Spill) Len() int { return s.n }

// Steps reads the steps back in order, from the first, each time it is
// called (readers read the file at their own offsets, so several may be
// open at once); no step may be written after.
func (s *Spill) Steps() (*SpillReader, error) {
	spillReads.Add(1)
	if err := s.flush(); err != nil {
		return nil, err
	}
	size, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("replay: spill: %w", err)
	}
	return &SpillReader{dec: gob.NewDecoder(bufio.NewReaderSize(io.NewSectionReader(s.f, 0, size), 256<<10))}, nil
}

// Close removes the spill.
func (s *Spill) Close() error {
	s.stop()
	return s.f.Close()
}

// stop ends the encoder, once it has written what it was given.
func (s *Spill) stop() {
	if s.work != nil {
		close(s.work)
		s.wg.Wait()
		s.work = nil
	}
}

// SpillReader reads a spill's steps; it holds nothing to close.
type SpillReader struct {
	dec *gob.Decoder
}

// Next is the next step, its Request set to request and its Output
// normalized from its replies by in. io.EOF after the last.
func (r *SpillReader) Next(request []byte, in kavach.Integration) (StepResult, error) {
	var sp spilled
	if err := r.dec.Decode(&sp); err != nil {
		if err != io.EOF {
			err = fmt.Errorf("replay: spill: %w", err)
		}
		return StepResult{}, err
	}
	s := StepResult{N: sp.N, Conn: sp.Conn, Ran: sp.Ran, Outcome: sp.Outcome, Responses: sp.Responses,
		Virtual: sp.Virtual, Answered: sp.Answered, Inputs: sp.Inputs, InputsError: sp.InputsError, Contained: sp.Contained, Foreign: sp.Foreign, Request: request, Output: []any{}}
	if s.Responses == nil {
		s.Responses = [][]byte{}
	}
	for _, resp := range s.Responses {
		s.Output = append(s.Output, in.Normalize(request, resp))
	}
	return s, nil
}

// ReadBack reads back from every spill at once readBackBatch steps, or
// fewer whose recorded requests and replies hold readBackBytes: a batch
// of steps with large values (100 KB replies) is held in memory once per
// spill, and stays a few megabytes.
const (
	readBackBatch = 512
	readBackBytes = 1 << 20
)

// ReadBack reads spilled replays back beside the recording, step by step
// and in step order: steps calls its argument with each step of the
// recording in order (as fixtures.Summary.EachStep does: a step's data
// may be valid only during the call), and for each, fn gets that step and
// every spill's result for it, got[i] read from spills[i] with the step's
// request and its output normalized by in. got is reused from one call of
// fn to the next; the step is a copy, fn may keep it. name(i) says which
// replay spill i holds, for errors ("run 2").
//
// Steps are read back readBackBatch at a time, each spill decoded and its
// replies normalized by a goroutine of its own, so that a long
// recording's read-back (millions of steps, four spills after a diff)
// takes every core rather than one; fn still sees the steps one by one,
// in order, and an error is the one a read in step order meets first.
// Memory holds a batch of each spill (readBackBytes bounds it), not the
// spills.
func ReadBack(steps func(func(kavach.Step) error) error, spills []*Spill, in kavach.Integration, name func(i int) string,
	fn func(st kavach.Step, got []StepResult) error) error {
	readers := make([]*SpillReader, len(spills))
	for i, sp := range spills {
		rd, err := sp.Steps()
		if err != nil {
			return err
		}
		readers[i] = rd
	}
	batch := make([]kavach.Step, 0, readBackBatch)
	size := 0 // the batch's recorded bytes
	results := make([][]StepResult, len(readers))
	errs := make([]error, len(readers))
	got := make([]StepResult, len(readers))
	flush := func() error {
		var wg sync.WaitGroup
		for i, rd := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := results[i][:0]
				errs[i] = nil
				for _, st := range batch {
					s, err := rd.Next(st.Request.Data, in)
					if err != nil {
						errs[i] = err // at step len(res) of the batch
						break
					}
					res = append(res, s)
				}
				results[i] = res
			}()
		}
		wg.Wait()
		for j, st := range batch {
			for i := range readers {
				if j == len(results[i]) {
					return fmt.Errorf("%s, step %d: %w", name(i), st.N, errs[i])
				}
				got[i] = results[i][j]
			}
			if err := fn(st, got); err != nil {
				return err
			}
		}
		batch, size = batch[:0], 0
		return nil
	}
	var failed error // a spill's or fn's, which ends steps
	err := steps(func(st kavach.Step) error {
		batch = append(batch, cloneStep(st))
		size += len(st.Request.Data)
		for _, r := range st.Responses {
			size += len(r.Data)
		}
		if len(batch) == readBackBatch || size >= readBackBytes {
			failed = flush()
		}
		return failed
	})
	if failed != nil {
		return failed
	}
	// The steps read before an error of the recording's own are still
	// given to fn, as one at a time would have given them.
	if ferr := flush(); ferr != nil {
		return ferr
	}
	return err
}

// cloneStep is s with its own copy of its data.
func cloneStep(s kavach.Step) kavach.Step {
	s.Request.Data = bytes.Clone(s.Request.Data)
	rs := make([]kavach.Event, len(s.Responses))
	for i, r := range s.Responses {
		r.Data = bytes.Clone(r.Data)
		rs[i] = r
	}
	s.Responses = rs
	return s
}
