package dsl

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// MaxDuration is the longest duration a pipeline can give (timeout,
// kill_grace, item_timeout, ...): about 292 years, to the second.
const MaxDuration = time.Duration(math.MaxInt64) / time.Second * time.Second

// DurationTooLarge says that what, a duration as the pipeline wrote it,
// is longer than MaxDuration, and what the longest allowed is.
func DurationTooLarge(what string) error {
	return fmt.Errorf("%s is too large: a duration is at most %s (about 292 years)", what, MaxDuration)
}

// SecondsDuration is f seconds as a duration; false when it is longer
// than MaxDuration (or not a number), where a conversion would wrap. One
// further below 0 is -MaxDuration: negative, as callers refuse it.
func SecondsDuration(f float64) (time.Duration, bool) {
	switch {
	case math.IsNaN(f) || f > MaxDuration.Seconds():
		return 0, false
	case f < -MaxDuration.Seconds():
		return -MaxDuration, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// goDuration matches a duration in Go's syntax ("90s", "1h30m"), whatever
// its size: time.ParseDuration refuses one too large with the words it
// has for a typo.
var goDuration = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// ParseGoDuration is time.ParseDuration, whose error for a duration in
// Go's syntax longer than MaxDuration is DurationTooLarge (one further
// below 0 is -MaxDuration, negative); ok is false when s is not in Go's
// syntax, for the caller to read it as a number of seconds. A number that
// is no length of time ("NaN", "Inf", "-Inf", as a float parser would take
// them) is refused here, ok true, as not a duration: neither too large nor
// negative.
func ParseGoDuration(s string) (d time.Duration, ok bool, err error) {
	d, err = time.ParseDuration(s)
	switch {
	case err == nil:
		return d, true, nil
	case nonFinite(s):
		return 0, true, fmt.Errorf("%q is not a duration: write a number of seconds, or one like \"90s\", \"60m\" or \"1h30m\"", s)
	case !goDuration.MatchString(s):
		return 0, false, err
	case s[0] == '-':
		return -MaxDuration, true, nil
	}
	return 0, true, DurationTooLarge(fmt.Sprintf("%q", s))
}

// nonFinite reports whether s spells NaN or an infinity, in any case and
// with any sign ("NaN", "inf", "-Infinity"), as strconv.ParseFloat and
// fmt's %g read them; a finite number too large for a float64 ("1e400")
// is not one.
func nonFinite(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && (math.IsNaN(f) || math.IsInf(f, 0))
}
