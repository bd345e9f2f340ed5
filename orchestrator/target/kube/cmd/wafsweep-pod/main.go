// Command wafsweep-pod is the one program of the Kubernetes targets' pods
// besides Envoy: the benchmark backend, the load generator, the cgroup
// agent, an HTTP probe for servers that listen on 127.0.0.1 only, and a
// pause program for test nodes that must not pull the usual pause image.
// Built statically (CGO_ENABLED=0) into the image by package image.
package main

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

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/cgroup"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/remoteload"
)

const usage = `usage: wafsweep-pod <command> [flags]

commands:
  backend        the benchmark backend (--listen)
  loadgen        runs the sweep's load steps, window-exact (--listen)
  cgroup-agent   serves containers' cgroup readings (--listen, --cgroup-root)
  probe URL      exits 0 iff GET URL answers 200 (readiness probes)
  pause          sleeps until SIGTERM (a pod sandbox)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "backend":
		os.Exit(backend.Main(args))
	case "loadgen":
		err = serveLoadgen(ctx, args)
	case "cgroup-agent":
		err = serveAgent(ctx, args)
	case "probe":
		err = probe(args)
	case "pause":
		<-ctx.Done()
	default:
		fmt.Fprintf(os.Stderr, "wafsweep-pod: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep-pod %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func serveLoadgen(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8088", "address of the control API (reached through a port-forward)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return serve(ctx, *listen, remoteload.Handler())
}

func serveAgent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cgroup-agent", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9090", "address of the API")
	root := fs.String("cgroup-root", "/sys/fs/cgroup", "the node's cgroup filesystem")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return serve(ctx, *listen, cgroup.Handler(&cgroup.Reader{Root: *root}, cgroup.SelfCPUs))
}

func serve(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func probe(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: probe URL")
	}
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(args[0])
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", args[0], resp.Status)
	}
	return nil
}
