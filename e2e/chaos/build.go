package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BuildBraid builds the braid binary into dir and returns its path.
func BuildBraid(ctx context.Context, dir string) (string, error) {
	return goBuild(ctx, filepath.Join(dir, "braid"), "./cmd/braid")
}

// BuildWorker builds the chaos worker into dir and returns its path.
func BuildWorker(ctx context.Context, dir string) (string, error) {
	return goBuild(ctx, filepath.Join(dir, "chaos-worker"), "./e2e/chaos/worker")
}

// goBuild builds pkg, a path relative to the module root, into out.
func goBuild(ctx context.Context, out, pkg string) (string, error) {
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}
