package nginxproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/nginxconfig"
)

// StatusCounter reads the requests nginx has served from its status server
// (nginxconfig.Options.StatusPort: stub_status, summed over the workers).
// stub_status counts every client request, its own among them: each read
// is taken off, so the count is of the requests sent to the proxy.
type StatusCounter struct {
	url    string
	client *http.Client
	reads  atomic.Int64
}

// NewStatusCounter reads the status server on port of 127.0.0.1.
func NewStatusCounter(port int) *StatusCounter {
	return &StatusCounter{
		url:    fmt.Sprintf("http://127.0.0.1:%d%s", port, nginxconfig.StatusPath),
		client: &http.Client{Timeout: 2 * time.Second},
	}
}

// Requests is nginx's count of the client requests it received, less the
// status reads of this counter.
func (c *StatusCounter) Requests(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return 0, err
	}
	reads := c.reads.Add(1)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("nginx status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, fmt.Errorf("nginx status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("nginx status: %s", resp.Status)
	}
	n, err := parseStubStatus(string(body))
	if err != nil {
		return 0, err
	}
	return n - reads, nil
}

// parseStubStatus reads the requests counter of a stub_status page:
//
//	Active connections: 1
//	server accepts handled requests
//	 7 7 12
//	Reading: 0 Writing: 1 Waiting: 0
func parseStubStatus(page string) (int64, error) {
	lines := strings.Split(page, "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != "server accepts handled requests" || i+1 >= len(lines) {
			continue
		}
		fields := strings.Fields(lines[i+1])
		if len(fields) != 3 {
			break
		}
		return strconv.ParseInt(fields[2], 10, 64)
	}
	return 0, fmt.Errorf("nginx status: no request counter in %.200q", page)
}
