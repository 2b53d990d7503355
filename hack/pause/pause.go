// Command pause is the real node's pod sandbox process (hack/cluster.sh --real-node): it holds the
// pod's namespaces open, reaps zombies when it is the pod's PID 1 (shareProcessNamespace), and exits
// on SIGINT/SIGTERM. Our own source, so no registry has to serve registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// One SIGCHLD may stand for several exited children.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
