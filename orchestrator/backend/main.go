package backend

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Serve runs a backend on addr until ctx ends. started, if not nil, is
// called once the listener is bound, e.g. to learn the port of
// "127.0.0.1:0".
func Serve(ctx context.Context, addr string, o Options, started func(*Server)) error {
	s, err := StartWith(addr, o)
	if err != nil {
		return err
	}
	if started != nil {
		started(s)
	}
	<-ctx.Done()
	return s.Close()
}

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
	var served *Server
	err := Serve(ctx, *listen, o, func(s *Server) {
		served = s
		fmt.Fprintf(stdout, "listening on %s\n", s.Addr())
	})
	if served != nil {
		fmt.Fprint(stderr, served.Stats().Summary())
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
