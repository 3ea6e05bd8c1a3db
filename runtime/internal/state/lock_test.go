package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDestroyRefusesAnOpenStore checks that Destroy leaves an open store
// alone with ErrLocked, and removes it once closed.
func TestDestroyRefusesAnOpenStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "0_0", "counts")
	s := openStore(t, dir)
	if err := Destroy(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Destroy of an open store: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("open store's dir after a refused Destroy: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Destroy(dir); err != nil {
		t.Fatalf("Destroy of a closed store: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir after Destroy: %v, want it gone", err)
	}
}

// TestLockDirIsExclusive checks that a second LockDir of a directory
// fails with ErrLocked until the first is released.
func TestLockDirIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second LockDir: %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir after release: %v", err)
	}
	l.Close()
}
