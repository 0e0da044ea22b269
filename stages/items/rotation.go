package items

import (
	"sync"
	"time"
)

// The rotation: endpoints a serve stage took out of service (a replica
// that died or stopped answering its health checks, until it is ready
// again). Pickers pass over them, so that no new request goes to a replica
// known to be down; an item in flight on it fails as an infrastructure
// failure and is sent again to another. The serve stage and the stages
// that consume its endpoints run in one cairn process, which this registry
// spans.
var rotation struct {
	mu   sync.Mutex
	down map[string]bool
	// changed is closed and replaced at every change, waking Pickers
	// that wait for an endpoint to come back.
	changed chan struct{}
	// answered is when a consumer last had an answer from the endpoint
	// (EndpointAnswered).
	answered map[string]time.Time
}

// SetEndpointDown takes the endpoint (a base URL, as the consumers were
// given it) out of the rotation (down) or puts it back.
func SetEndpointDown(endpoint string, down bool) {
	rotation.mu.Lock()
	defer rotation.mu.Unlock()
	if rotation.down == nil {
		rotation.down = map[string]bool{}
	}
	if rotation.down[endpoint] == down {
		return
	}
	if down {
		rotation.down[endpoint] = true
	} else {
		delete(rotation.down, endpoint)
	}
	if rotation.changed != nil {
		close(rotation.changed)
		rotation.changed = nil
	}
}

// EndpointDown reports whether the endpoint is out of the rotation.
func EndpointDown(endpoint string) bool {
	rotation.mu.Lock()
	defer rotation.mu.Unlock()
	return rotation.down[endpoint]
}

// rotationChanged is closed at the rotation's next change.
func rotationChanged() <-chan struct{} {
	rotation.mu.Lock()
	defer rotation.mu.Unlock()
	if rotation.changed == nil {
		rotation.changed = make(chan struct{})
	}
	return rotation.changed
}

// EndpointAnswered records that a consumer's request to the endpoint was
// answered (an item's result that is not an infrastructure failure, or a
// forwarded request's reply): the server behind it is alive, if busy.
func EndpointAnswered(endpoint string) {
	if endpoint == "" {
		return
	}
	now := time.Now()
	rotation.mu.Lock()
	defer rotation.mu.Unlock()
	if rotation.answered == nil {
		rotation.answered = map[string]time.Time{}
	}
	rotation.answered[endpoint] = now
}

// EndpointAnsweredSince reports whether a consumer's request to the
// endpoint was answered at or after t. A serve stage asks it of a replica
// whose health check went unanswered: a server that serves one request at
// a time answers its health path only after the completions queued before
// it, so a late answer while consumers are answered is a busy replica, not
// a hung one.
func EndpointAnsweredSince(endpoint string, t time.Time) bool {
	rotation.mu.Lock()
	defer rotation.mu.Unlock()
	at, ok := rotation.answered[endpoint]
	return ok && !at.Before(t)
}
