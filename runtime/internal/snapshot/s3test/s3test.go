// Package s3test starts an S3 protocol server (gofakes3, in memory) on
// loopback for tests of snapshots in S3-compatible stores: the real
// protocol through the real client, with nothing to install.
package s3test

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Bucket starts a server holding one empty bucket, stopped when t ends,
// and returns the bucket's gocloud.dev URL.
func Bucket(t testing.TB) string {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("snapshots"); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gofakes3.New(be).Server(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return fmt.Sprintf("s3://snapshots?endpoint=http://%s&use_path_style=true&region=us-east-1&anonymous=true&disable_https=true", l.Addr())
}
