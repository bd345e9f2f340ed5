package remoteload

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

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
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(spec); err != nil {
		return loadgen.Result{}, fmt.Errorf("remote load: encoding the step: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+RunPath, &body)
	if err != nil {
		return loadgen.Result{}, fmt.Errorf("remote load: %w", err)
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return loadgen.Result{}, fmt.Errorf("remote load at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return loadgen.Result{}, fmt.Errorf("remote load at %s: %s: %s", c.BaseURL, resp.Status, strings.TrimSpace(string(text)))
	}
	return readStream(ctx, gob.NewDecoder(resp.Body), spec.OnEdge)
}

// readStream reads the edges (passing each to onEdge) up to the outcome.
func readStream(ctx context.Context, dec *gob.Decoder, onEdge func(loadgen.Edge)) (loadgen.Result, error) {
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if ctx.Err() != nil {
				return loadgen.Result{}, fmt.Errorf("remote load: %w", ctx.Err())
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return loadgen.Result{}, fmt.Errorf("remote load: the stream broke before the step's outcome: %w", err)
		}
		switch m.Kind {
		case kindEdge:
			if onEdge != nil {
				onEdge(m.Edge)
			}
		case kindResult:
			if m.Result != nil {
				return *m.Result, nil
			}
			return loadgen.Result{}, errors.New("remote load: a result message without its result")
		case kindError:
			return loadgen.Result{}, fmt.Errorf("remote load: %s", m.Err)
		default:
			return loadgen.Result{}, fmt.Errorf("remote load: unknown message kind %d", m.Kind)
		}
	}
}
