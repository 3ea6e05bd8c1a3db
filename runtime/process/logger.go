package process

import (
	"io"
	"log/slog"
)

// Logger is the logger of a process: slog's text handler on w, at Info.
// braid run and exported programs make their default logger with it, so
// that both log in one format (time=... level=INFO msg=...).
func Logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
