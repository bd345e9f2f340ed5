package backend

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main is the `wafsweep backend` subcommand: it serves until SIGINT or
// SIGTERM and prints "listening on HOST:PORT" once bound, so a parent that
// asked for port 0 can read the port from stdout. It returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("backend", flag.ContinueOnError)
	flags.SetOutput(stderr)
	listen := flags.String("listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	statsListen := flags.String("stats-listen", "", "answer "+StatsPath+" here with what every listener served so far, as JSON (keep it on loopback: a Kubernetes backend is read through a port-forward)")
	tlsListen := flags.String("tls-listen", "", "also serve TLS here with --tls-cert, --listen staying in clear (a Kubernetes backend: the proxies' origin and the direct flavor's edge at once)")
	var o Options
	flags.DurationVar(&o.Cost.CPU, "cpu-per-request", 0, "CPU time to spend on every request (a calibration backend of known capacity)")
	flags.DurationVar(&o.Cost.Sleep, "sleep-per-request", 0, "time to sleep on every request (a calibration backend of known latency)")
	flags.BoolVar(&o.HTTP2, "http2", false, "also accept HTTP/2 (h2c with prior knowledge; ALPN h2 with TLS)")
	flags.StringVar(&o.CertFile, "tls-cert", "", "serve TLS with this PEM certificate chain (needs --tls-key)")
	flags.StringVar(&o.KeyFile, "tls-key", "", "the PEM private key of --tls-cert")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "backend: unexpected arguments %q\n", flags.Args())
		return 2
	}
	listeners := []listener{{*listen, o, "listening on %s\n"}}
	if *tlsListen != "" {
		if o.CertFile == "" {
			fmt.Fprintln(stderr, "backend: --tls-listen needs --tls-cert and --tls-key")
			return 2
		}
		clear := o
		clear.CertFile, clear.KeyFile = "", ""
		listeners = []listener{{*listen, clear, "listening on %s\n"}, {*tlsListen, o, "listening for TLS on %s\n"}}
	}
	stats, err := serveAll(ctx, listeners, *statsListen, stdout)
	fmt.Fprint(stderr, stats.Summary())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// listener is one address the subcommand serves, with what it prints once
// bound.
type listener struct {
	addr    string
	opts    Options
	started string
}

// serveAll serves every listener until ctx ends, and their counts on
// statsAddr when set, and returns what they served together.
func serveAll(ctx context.Context, listeners []listener, statsAddr string, stdout io.Writer) (Stats, error) {
	var servers []*Server
	var err error
	for _, l := range listeners {
		var s *Server
		if s, err = StartWith(l.addr, l.opts); err != nil {
			break
		}
		servers = append(servers, s)
		fmt.Fprintf(stdout, l.started, s.Addr())
	}
	total := func() Stats {
		var t Stats
		for _, s := range servers {
			t = t.Plus(s.Stats())
		}
		return t
	}
	var statsServer *http.Server
	if err == nil && statsAddr != "" {
		var ln net.Listener
		if ln, err = net.Listen("tcp", statsAddr); err == nil {
			statsServer = &http.Server{Handler: StatsHandler(total), ReadHeaderTimeout: 10 * time.Second}
			go statsServer.Serve(ln)
			fmt.Fprintf(stdout, "stats on %s\n", ln.Addr())
		} else {
			err = fmt.Errorf("backend: stats listener: %w", err)
		}
	}
	if err == nil {
		<-ctx.Done()
	}
	errs := []error{err}
	if statsServer != nil {
		errs = append(errs, statsServer.Close())
	}
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	return total(), errors.Join(errs...)
}
