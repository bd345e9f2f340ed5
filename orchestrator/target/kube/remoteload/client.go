package remoteload

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// Client runs steps on one Handler; BaseURL is its control address (a
// port-forward), never the data plane.
type Client struct {
	BaseURL string
	// HTTP defaults to a client without a timeout: a step lasts as long as
	// its warm-up, window and tail, and ctx bounds it.
	HTTP *http.Client
}

// Run runs spec remotely and returns what loadgen.Run returned there.
// spec.OnEdge is called here as each edge arrives. Cancelling ctx ends the
// remote run too (the handler's request context).
func (c Client) Run(ctx context.Context, spec loadgen.Spec) (loadgen.Result, error) {
	all, _, err := c.RunAll(ctx, []loadgen.Spec{spec})
	return all, err
}

// RunAll runs specs remotely and returns what loadgen.RunAll returned
// there; the first spec's OnEdge is called here as each edge arrives.
func (c Client) RunAll(ctx context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	if len(specs) == 0 {
		return loadgen.Result{}, nil, errors.New("remote load: no run in the step")
	}
	st, err := newStep(specs)
	if err != nil {
		return loadgen.Result{}, nil, err
	}
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(st); err != nil {
		return loadgen.Result{}, nil, fmt.Errorf("remote load: encoding the step: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+RunPath, &body)
	if err != nil {
		return loadgen.Result{}, nil, fmt.Errorf("remote load: %w", err)
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return loadgen.Result{}, nil, fmt.Errorf("remote load at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return loadgen.Result{}, nil, fmt.Errorf("remote load at %s: %s: %s", c.BaseURL, resp.Status, strings.TrimSpace(string(text)))
	}
	return readStream(ctx, gob.NewDecoder(resp.Body), specs[0].OnEdge)
}

// newStep carries specs with the CA files they name.
func newStep(specs []loadgen.Spec) (step, error) {
	st := step{Runs: specs}
	for _, s := range specs {
		if s.CAFile == "" || st.CAs[s.CAFile] != nil {
			continue
		}
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return step{}, fmt.Errorf("remote load: the step's CA: %w", err)
		}
		if st.CAs == nil {
			st.CAs = map[string][]byte{}
		}
		st.CAs[s.CAFile] = pem
	}
	return st, nil
}

// readStream reads the edges (passing each to onEdge) up to the outcome.
func readStream(ctx context.Context, dec *gob.Decoder, onEdge func(loadgen.Edge, time.Time)) (loadgen.Result, []loadgen.Result, error) {
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if ctx.Err() != nil {
				return loadgen.Result{}, nil, fmt.Errorf("remote load: %w", ctx.Err())
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return loadgen.Result{}, nil, fmt.Errorf("remote load: the stream broke before the step's outcome: %w", err)
		}
		switch m.Kind {
		case kindEdge:
			if onEdge != nil {
				onEdge(m.Edge, m.At)
			}
		case kindResult:
			if m.Result != nil {
				return *m.Result, m.Each, nil
			}
			return loadgen.Result{}, nil, errors.New("remote load: a result message without its result")
		case kindError:
			return loadgen.Result{}, nil, fmt.Errorf("remote load: %s", m.Err)
		default:
			return loadgen.Result{}, nil, fmt.Errorf("remote load: unknown message kind %d", m.Kind)
		}
	}
}
