// Command catalog-serve serves a file-based catalog over OLM's registry gRPC API, like `opm serve`,
// but on an address the caller chooses: `opm serve` listens on every interface, and the tests that
// point a CatalogSource (spec.address) at it must keep their servers on loopback.
//
//	catalog-serve [--address 127.0.0.1:0] <catalog-dir>
//
// It prints "serving <host:port>" on stdout once the catalog is loaded and the port is open.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	health "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/server"
)

func main() {
	address := flag.String("address", "127.0.0.1:0", "host:port to listen on")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: catalog-serve [--address host:port] <catalog-dir>")
		os.Exit(2)
	}
	if err := serve(flag.Arg(0), *address); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func serve(dir, address string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := logrus.NewEntry(logrus.StandardLogger())

	cacheDir, err := os.MkdirTemp("", "catalog-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cacheDir)
	store, err := cache.New(cacheDir, cache.WithLog(log))
	if err != nil {
		return err
	}
	defer store.Close()
	if err := cache.LoadOrRebuild(ctx, store, os.DirFS(dir)); err != nil {
		return fmt.Errorf("loading catalog %s: %w", dir, err)
	}

	lis, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	api.RegisterRegistryServer(s, server.NewRegistryServer(store))
	health.RegisterHealthServer(s, server.NewHealthServer())
	go func() {
		<-ctx.Done()
		s.GracefulStop()
	}()
	fmt.Printf("serving %s\n", lis.Addr())
	return s.Serve(lis)
}
