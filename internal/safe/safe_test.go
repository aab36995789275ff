package safe

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestGroupRecovers(t *testing.T) {
	for _, debug := range []string{"", "1"} {
		t.Setenv(EnvDebug, debug)
		g, _ := WithContext(context.Background())
		g.Go(func() error { return nil })
		g.Go(func() error { panic(io.ErrShortWrite) })
		err := g.Wait()
		if !errors.Is(err, ErrInternal) || !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("want ErrInternal wrapping the panic's error, got %v", err)
		}
		if hasStack := strings.Contains(err.Error(), "goroutine "); hasStack != (debug == "1") {
			t.Errorf("FLOE_DEBUG=%q: stack in the message %v: %s", debug, hasStack, err)
		}
	}
}

func TestRecoverReports(t *testing.T) {
	errc := make(chan error, 1)
	go func() {
		defer Recover(func(err error) { errc <- err })
		var m map[string]int
		//lint:ignore SA5000 the test panics on purpose
		m["x"] = 1 // a runtime panic
	}()
	err := <-errc
	if !errors.Is(err, ErrInternal) || !strings.Contains(err.Error(), "assignment to entry in nil map") {
		t.Fatalf("got %v", err)
	}
	done := make(chan struct{})
	Go(func() { defer close(done); panic("logged, not a crash") }, nil)
	<-done
}
