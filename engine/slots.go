package engine

// slotPolicy decides which of a batch's pinned devices the next variant
// gets. The scheduler and the tests' virtual-clock simulation
// (BatchMakespan, batchsim_test.go) use the same policy, so what the
// simulation measures is what runs.
//
// waves: a wave of up to par variants starts on devices[0..par); the next
// wave starts only when every variant of the previous one has ended.
// backfill: a variant starts as soon as any of the devices is free.
type slotPolicy struct {
	mode    string
	devices []int
	inUse   map[int]int // device -> variant id
	wave    int         // current wave number (waves mode), from 1
	slots   int         // devices left in the current wave
	live    int         // variants of the current wave still running
}

func newSlotPolicy(mode string, devices []int) *slotPolicy {
	return &slotPolicy{mode: mode, devices: devices, inUse: map[int]int{}}
}

// next returns the device for the next variant and its wave (0 in
// backfill mode), or ok=false when the variant must wait.
func (s *slotPolicy) next() (dev, wave int, ok bool) {
	if s.mode == "backfill" {
		for _, d := range s.devices {
			if _, busy := s.inUse[d]; !busy {
				return d, 0, true
			}
		}
		return -1, 0, false
	}
	if s.slots == 0 {
		if s.live > 0 {
			return -1, 0, false
		}
		return s.devices[0], s.wave + 1, true
	}
	return s.devices[len(s.devices)-s.slots], s.wave, true
}

// take records that variant id started on dev in wave.
func (s *slotPolicy) take(dev, wave, id int) {
	s.inUse[dev] = id
	if s.mode == "backfill" {
		return
	}
	if wave != s.wave {
		s.wave = wave
		s.slots = len(s.devices)
	}
	s.slots--
	s.live++
}

// free records that variant id, started in wave, ended.
func (s *slotPolicy) free(id, wave int) {
	for d, v := range s.inUse {
		if v == id {
			delete(s.inUse, d)
		}
	}
	if s.mode != "backfill" && wave == s.wave {
		s.live--
	}
}
