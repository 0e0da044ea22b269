package items

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultReflectionBaseURL is where the reflection model is served when
// REFLECTION_MODEL_BASE_URL is not set.
const DefaultReflectionBaseURL = "http://localhost:8200/v1"

// ErrNoEndpoints is returned by ParseEndpoints when no task endpoint is
// configured anywhere.
var ErrNoEndpoints = errors.New("no task model endpoint: set the stage's endpoints attribute, TASK_ENDPOINTS (comma-separated) or VLLM_BASE_URL")

// ErrPreflight wraps every error of Preflight about an endpoint: down, not an
// OpenAI model list, or not serving the task model.
var ErrPreflight = errors.New("the endpoint check")

// ParseEndpoints returns the task model's base URLs (each ending in /v1, as
// vLLM serves them). The stage's attribute wins when it names any; otherwise
// TASK_ENDPOINTS, a comma-separated list; otherwise VLLM_BASE_URL. Blank
// entries are dropped and trailing slashes trimmed; an entry that is not an
// http(s) URL is an error.
func ParseEndpoints(attr []string, env func(string) string) ([]string, error) {
	var raw []string
	var from string
	switch {
	case len(nonBlank(attr)) > 0:
		raw, from = attr, "the endpoints attribute"
	case strings.TrimSpace(env("TASK_ENDPOINTS")) != "":
		raw, from = strings.Split(env("TASK_ENDPOINTS"), ","), "TASK_ENDPOINTS"
	case strings.TrimSpace(env("VLLM_BASE_URL")) != "":
		raw, from = []string{env("VLLM_BASE_URL")}, "VLLM_BASE_URL"
	default:
		return nil, ErrNoEndpoints
	}
	var out []string
	for _, e := range nonBlank(raw) {
		e = strings.TrimRight(e, "/")
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			return nil, fmt.Errorf("endpoint %q from %s is not an http(s) base URL such as http://localhost:8000/v1", e, from)
		}
		out = append(out, e)
	}
	return out, nil
}

// ReflectionBaseURL returns REFLECTION_MODEL_BASE_URL, or
// DefaultReflectionBaseURL when it is unset.
func ReflectionBaseURL(env func(string) string) string {
	if u := strings.TrimSpace(env("REFLECTION_MODEL_BASE_URL")); u != "" {
		return strings.TrimRight(u, "/")
	}
	return DefaultReflectionBaseURL
}

func nonBlank(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Picker hands out endpoints round robin. It is safe for concurrent use.
// With a limit, no endpoint has more than limit requests outstanding:
// Acquire skips full endpoints and waits when all are full.
type Picker struct {
	mu     sync.Mutex
	eps    []string
	inUse  []int
	limit  int
	next   int
	freed  chan struct{} // closed and replaced whenever a slot frees
	served []int
}

// NewPicker returns a Picker over endpoints; limit <= 0 means no limit.
func NewPicker(endpoints []string, limit int) *Picker {
	return &Picker{
		eps:    slices.Clone(endpoints),
		inUse:  make([]int, len(endpoints)),
		served: make([]int, len(endpoints)),
		limit:  limit,
		freed:  make(chan struct{}),
	}
}

// Len is the number of endpoints.
func (p *Picker) Len() int { return len(p.eps) }

// Next returns the next endpoint in turn, ignoring the limit: the plain round
// robin an adapter uses for each client it builds. It returns "" when the
// Picker has no endpoints.
func (p *Picker) Next() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.eps) == 0 {
		return ""
	}
	i := p.next % len(p.eps)
	for k := range len(p.eps) {
		if j := (p.next + k) % len(p.eps); !EndpointDown(p.eps[j]) {
			i = j
			break
		}
	}
	p.next = i + 1
	p.served[i]++
	return p.eps[i]
}

// Acquire returns the next endpoint in turn that is under the limit, and the
// function that gives its slot back. It waits while every endpoint is full,
// until ctx ends. With no endpoints it returns "".
func (p *Picker) Acquire(ctx context.Context) (string, func(), error) {
	return p.AcquireAvoiding(ctx, "", nil)
}

// AcquireAvoiding is Acquire that passes over avoid (the endpoint an item
// just failed on) whenever the Picker has another endpoint in service. An
// endpoint out of the rotation (SetEndpointDown) is passed over; while all
// are, it waits for one to come back. Before it first waits it calls
// waiting, when set: a caller holding requests it has not sent yet sends
// them then, since the slots they took are freed only by their replies.
func (p *Picker) AcquireAvoiding(ctx context.Context, avoid string, waiting func()) (string, func(), error) {
	for {
		p.mu.Lock()
		n := len(p.eps)
		if n == 0 {
			p.mu.Unlock()
			return "", func() {}, nil
		}
		up := 0
		for _, ep := range p.eps {
			if !EndpointDown(ep) {
				up++
			}
		}
		for k := range n {
			i := (p.next + k) % n
			if p.limit > 0 && p.inUse[i] >= p.limit || up > 1 && p.eps[i] == avoid || EndpointDown(p.eps[i]) {
				continue
			}
			p.inUse[i]++
			p.served[i]++
			p.next = i + 1
			p.mu.Unlock()
			var once sync.Once
			return p.eps[i], func() { once.Do(func() { p.release(i) }) }, nil
		}
		freed := p.freed
		p.mu.Unlock()
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-freed:
		case <-rotationChanged():
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
	}
}

func (p *Picker) release(i int) {
	p.mu.Lock()
	p.inUse[i]--
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}

// Served returns how many times each endpoint was handed out, in the order
// given to NewPicker.
func (p *Picker) Served() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.served)
}

// Preflight checks, before any item is sent, that every endpoint answers
// GET <endpoint>/models and lists modelID. The error names each endpoint
// that is down or does not serve the model, and what it serves instead.
func Preflight(ctx context.Context, endpoints []string, modelID string) error {
	if len(endpoints) == 0 {
		return ErrNoEndpoints
	}
	// An endpoint out of the rotation (a replica a serve stage restarts)
	// gets no request until it is back: it is not asked either, unless
	// every endpoint is.
	var up []string
	for _, ep := range endpoints {
		if !EndpointDown(ep) {
			up = append(up, ep)
		}
	}
	if len(up) > 0 {
		endpoints = up
	}
	errs := make([]error, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() { errs[i] = preflightOne(ctx, ep, modelID) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func preflightOne(ctx context.Context, endpoint, modelID string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	url := strings.TrimRight(endpoint, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: endpoint %s: %w", ErrPreflight, endpoint, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: endpoint %s is not reachable (GET %s): %w", ErrPreflight, endpoint, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%w: endpoint %s: reading GET %s: %w", ErrPreflight, endpoint, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusNotFound && !strings.HasSuffix(strings.TrimRight(endpoint, "/"), "/v1") {
			hint = " (an endpoint is the server's OpenAI base URL, which for vLLM ends in /v1: http://HOST:PORT/v1)"
		}
		return fmt.Errorf("%w: endpoint %s answered GET %s with HTTP %d%s: %s", ErrPreflight, endpoint, url, resp.StatusCode, hint, snippet(body))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("%w: endpoint %s: GET %s is not an OpenAI model list: %w", ErrPreflight, endpoint, url, err)
	}
	var served []string
	for _, m := range list.Data {
		if m.ID == modelID {
			return nil
		}
		served = append(served, m.ID)
	}
	what := "no model"
	if len(served) > 0 {
		what = strings.Join(served, ", ")
	}
	return fmt.Errorf("%w: endpoint %s does not serve the task model %q; it serves %s", ErrPreflight, endpoint, modelID, what)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
