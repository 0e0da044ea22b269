package items

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

func TestParseEndpoints(t *testing.T) {
	tests := []struct {
		name    string
		attr    []string
		env     map[string]string
		want    []string
		wantErr string
	}{
		{
			name: "attribute wins",
			attr: []string{"http://a:8000/v1/", " http://b:8001/v1"},
			env:  map[string]string{"TASK_ENDPOINTS": "http://x/v1", "VLLM_BASE_URL": "http://y/v1"},
			want: []string{"http://a:8000/v1", "http://b:8001/v1"},
		},
		{
			name: "TASK_ENDPOINTS comma list",
			attr: []string{"", "  "},
			env:  map[string]string{"TASK_ENDPOINTS": "http://localhost:8000/v1, http://localhost:8001/v1,", "VLLM_BASE_URL": "http://y/v1"},
			want: []string{"http://localhost:8000/v1", "http://localhost:8001/v1"},
		},
		{
			name: "VLLM_BASE_URL fallback",
			env:  map[string]string{"TASK_ENDPOINTS": " ", "VLLM_BASE_URL": "http://localhost:8000/v1"},
			want: []string{"http://localhost:8000/v1"},
		},
		{name: "none", wantErr: "TASK_ENDPOINTS"},
		{
			name:    "not a URL",
			env:     map[string]string{"TASK_ENDPOINTS": "localhost:8000"},
			wantErr: `"localhost:8000" from TASK_ENDPOINTS`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEndpoints(tt.attr, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReflectionBaseURL(t *testing.T) {
	assert.Equal(t, "http://localhost:8200/v1", ReflectionBaseURL(func(string) string { return "" }))
	assert.Equal(t, "http://r:9/v1", ReflectionBaseURL(func(string) string { return "http://r:9/v1/" }))
}

func TestPickerRoundRobin(t *testing.T) {
	p := NewPicker([]string{"a", "b", "c"}, 0)
	var got []string
	for range 7 {
		got = append(got, p.Next())
	}
	assert.Equal(t, []string{"a", "b", "c", "a", "b", "c", "a"}, got)
	assert.Equal(t, []int{3, 2, 2}, p.Served())
	assert.Equal(t, "", NewPicker(nil, 0).Next())
}

func TestPickerLimit(t *testing.T) {
	const limit, workers, rounds = 2, 16, 200
	eps := []string{"a", "b", "c"}
	p := NewPicker(eps, limit)
	var inUse [3]atomic.Int32
	var over atomic.Bool
	index := map[string]int{"a": 0, "b": 1, "c": 2}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				ep, release, err := p.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if inUse[index[ep]].Add(1) > limit {
					over.Store(true)
				}
				inUse[index[ep]].Add(-1)
				release()
				release() // a second call is harmless
			}
		})
	}
	wg.Wait()
	assert.False(t, over.Load(), "an endpoint had more than %d requests outstanding", limit)
	served := p.Served()
	assert.Equal(t, workers*rounds, served[0]+served[1]+served[2])
	for i, n := range served {
		assert.Positive(t, n, "endpoint %s never served", eps[i])
	}

	// Every slot taken: Acquire waits, and gives up with its context.
	p = NewPicker([]string{"a"}, 1)
	_, release, err := p.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, _, err := p.Acquire(ctx)
		got <- err
	}()
	cancel()
	assert.ErrorIs(t, <-got, context.Canceled)
	release()
	_, release, err = p.Acquire(context.Background())
	require.NoError(t, err)
	release()
}

func TestPickerAvoidsFailedEndpoint(t *testing.T) {
	p := NewPicker([]string{"a", "b", "c"}, 0)
	for range 10 {
		ep, release, err := p.AcquireAvoiding(context.Background(), "b", nil)
		require.NoError(t, err)
		assert.NotEqual(t, "b", ep)
		release()
	}
	// With one endpoint there is nothing else to use.
	p = NewPicker([]string{"a"}, 0)
	ep, _, err := p.AcquireAvoiding(context.Background(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, "a", ep)
}

func TestPreflight(t *testing.T) {
	good, err := simmodel.Start(simmodel.Config{Models: []string{"qwen"}}, "")
	require.NoError(t, err)
	defer good.Close()
	other, err := simmodel.Start(simmodel.Config{Models: []string{"llama", "mistral"}}, "")
	require.NoError(t, err)
	defer other.Close()
	down := deadEndpoint(t)

	ctx := context.Background()
	require.NoError(t, Preflight(ctx, []string{good.URL, good.URL + "/"}, "qwen"))

	err = Preflight(ctx, []string{good.URL, other.URL}, "qwen")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoint "+other.URL+` does not serve the task model "qwen"; it serves llama, mistral`)
	assert.NotContains(t, err.Error(), "endpoint "+good.URL+" ")
	assert.ErrorIs(t, err, ErrPreflight)

	err = Preflight(ctx, []string{down, good.URL}, "qwen")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoint "+down+" is not reachable")
	assert.ErrorIs(t, err, ErrPreflight)

	// A server's root is not an endpoint: vLLM serves the API under /v1.
	root := strings.TrimSuffix(good.URL, "/v1")
	err = Preflight(ctx, []string{root}, "qwen")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoint "+root+" answered GET "+root+"/models with HTTP 404 (an endpoint is the server's OpenAI base URL, which for vLLM ends in /v1: http://HOST:PORT/v1)")

	assert.ErrorIs(t, Preflight(ctx, nil, "qwen"), ErrNoEndpoints)
	assert.Zero(t, good.ChatRequests()+other.ChatRequests())
}

// deadEndpoint returns the base URL of a loopback port nobody listens on.
func deadEndpoint(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr + "/v1"
}

// What an evaluation says of its endpoints is said in the user's words:
// no package name ("items: ") before the endpoint that is not a URL, the
// endpoint check that failed, or the missing endpoints.
func TestEndpointErrorsSpeakOfTheStage(t *testing.T) {
	_, err := ParseEndpoints([]string{"notaurl"}, func(string) string { return "" })
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), `endpoint "notaurl" from `), err.Error())
	_, err = ParseEndpoints(nil, func(string) string { return "" })
	require.ErrorIs(t, err, ErrNoEndpoints)
	assert.True(t, strings.HasPrefix(err.Error(), "no task model endpoint: "), err.Error())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String() + "/v1"
	require.NoError(t, l.Close())
	err = Preflight(context.Background(), []string{dead}, "m")
	require.ErrorIs(t, err, ErrPreflight)
	assert.True(t, strings.HasPrefix(err.Error(), "the endpoint check: endpoint "+dead+" is not reachable"), err.Error())
	assert.NotContains(t, err.Error(), "items:")
}
