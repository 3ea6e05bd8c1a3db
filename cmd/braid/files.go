package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// parseFiles parses args with fs, flags before or after the file
// arguments, and returns those.
func parseFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// readInput reads the file at path, or stdin for "-", and returns its
// contents and a name for errors.
func readInput(path string, stdin io.Reader) ([]byte, string, error) {
	if path == "-" {
		data, err := io.ReadAll(stdin)
		return data, "stdin", err
	}
	data, err := os.ReadFile(path)
	return data, path, err
}

// countNoun is "1 problem" or "n problems".
func countNoun(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
