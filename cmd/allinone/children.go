package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// binaries are the programs allinone starts.
type binaries struct {
	worker, api, redis string
}

// findBinaries finds the worker and api beside this binary (the image
// installs them together), in PDFEXPORT_BIN_DIR, or in PATH; and
// redis-server in REDIS_SERVER_BIN or PATH, needed only when no Redis is
// configured.
func findBinaries(environ []string) (binaries, error) {
	var b binaries
	dirs := []string{lookup(environ, "PDFEXPORT_BIN_DIR")}
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	var errs []error
	for _, name := range []string{"worker", "api"} {
		path, err := findIn(name, dirs)
		if err != nil {
			errs = append(errs, err)
		}
		if name == "worker" {
			b.worker = path
		} else {
			b.api = path
		}
	}
	if !sharedRedis(environ) {
		b.redis = lookup(environ, "REDIS_SERVER_BIN")
		if b.redis == "" {
			path, err := exec.LookPath("redis-server")
			if err != nil {
				errs = append(errs, fmt.Errorf("no REDIS_URL is set and no redis-server is in PATH (set REDIS_SERVER_BIN): %w", err))
			}
			b.redis = path
		}
	}
	return b, errors.Join(errs...)
}

func findIn(name string, dirs []string) (string, error) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("no %s binary beside allinone, in PDFEXPORT_BIN_DIR or in PATH", name)
	}
	return p, nil
}

// sharedRedis reports whether the environment names a Redis of its own.
func sharedRedis(environ []string) bool {
	for _, k := range []string{"REDIS_URL", "REDIS_SENTINEL_ADDRS", "REDIS_CLUSTER_ADDRS"} {
		if lookup(environ, k) != "" {
			return true
		}
	}
	return false
}

// lookup is the last value of key in environ, as os.Getenv would see it.
func lookup(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// withDefault is environ with key=value unless environ sets key.
func withDefault(environ []string, key, value string) []string {
	if lookup(environ, key) != "" {
		return environ
	}
	return append(environ[:len(environ):len(environ)], key+"="+value)
}
