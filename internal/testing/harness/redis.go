package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Redis is a private redis-server bound to 127.0.0.1, without persistence
// unless its arguments ask for it.
type Redis struct {
	Proc    *Proc
	Port    int
	Version string
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)) }

// URL is the redis:// URL of database db.
func (r *Redis) URL(db int) string { return fmt.Sprintf("redis://%s/%d", r.Addr(), db) }

var redisVersion = regexp.MustCompile(`v=(\S+)`)

// StartRedis starts redis-server on port (0: a free one) with its files and
// log in dir, extra arguments after the defaults (--save "" --appendonly no
// unless overridden), and waits until it answers (10 s at most).
func StartRedis(ctx context.Context, dir string, port int, extra ...string) (*Redis, error) {
	return StartRedisWith(ctx, dir, RedisOptions{Port: port, Extra: extra})
}

// RedisOptions are the settings of StartRedisWith.
type RedisOptions struct {
	Port  int      // 0: a free one
	Extra []string // arguments after the defaults
	// TLS serves only TLS on Port (--port 0 --tls-port Port); the TLS
	// arguments (certificate, key, CA) go in Extra.
	TLS bool
}

// StartRedisWith is StartRedis with options: a TLS-only server, and any
// authentication in Extra (the readiness probe accepts any answer, an
// authentication error included).
func StartRedisWith(ctx context.Context, dir string, o RedisOptions) (*Redis, error) {
	bin, dir, err := redisServerIn(dir)
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	r := &Redis{Port: port}
	if out, err := exec.CommandContext(ctx, bin, "--version").Output(); err == nil {
		if m := redisVersion.FindSubmatch(out); m != nil {
			r.Version = string(m[1])
		}
	}
	listen := []string{"--port", strconv.Itoa(port)}
	if o.TLS {
		listen = []string{"--port", "0", "--tls-port", strconv.Itoa(port)}
	}
	args := append(append(listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")), o.Extra...)
	r.Proc, err = Start("redis-server", "", bin, os.Environ(), args...)
	if err != nil {
		return nil, err
	}
	if err := waitAnswer(ctx, r.Addr(), o.TLS, r.Proc, 10*time.Second); err != nil {
		r.Proc.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		return nil, fmt.Errorf("redis-server on %s: %w\n%s", r.Addr(), err, log)
	}
	return r, nil
}

// Stop SIGKILLs the server, as a crash would, and waits for it.
func (r *Redis) Stop() { r.Proc.Kill() }

// waitAnswer sends PING (over TLS, not verified: it is our own server) until
// a RESP answer comes back — +PONG, or an authentication error from a server
// that wants a password — the process exits or timeout passes.
func waitAnswer(ctx context.Context, addr string, useTLS bool, p *Proc, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "no answer"
	for {
		if p.Exited() {
			return fmt.Errorf("exited: %v", p.Err())
		}
		var c net.Conn
		var err error
		d := &net.Dialer{Timeout: 200 * time.Millisecond}
		if useTLS {
			c, err = tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // probing our own test server
		} else {
			c, err = d.Dial("tcp", addr)
		}
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
			buf := make([]byte, 64)
			_, err = c.Write([]byte("PING\r\n"))
			n := 0
			if err == nil {
				n, err = c.Read(buf)
			}
			c.Close()
			if err == nil && n > 0 && (buf[0] == '+' || buf[0] == '-' && !strings.HasPrefix(string(buf[:n]), "-LOADING")) {
				return nil
			}
			if err != nil && useTLS && strings.Contains(err.Error(), "remote error: tls") {
				return nil // it answers TLS, and wants a client certificate the probe does not have
			}
			if err != nil {
				last = err.Error()
			} else {
				last = fmt.Sprintf("answer %q", buf[:n])
			}
		} else if useTLS && strings.Contains(err.Error(), "remote error: tls") {
			return nil
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("did not answer PING within %v: %s", timeout, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StartSentinel starts redis-server in Sentinel mode on port (0: a free
// one) with conf (sentinel.conf lines; port, bind and dir are added) in dir,
// and waits until it answers.
func StartSentinel(ctx context.Context, dir string, port int, conf []string) (*Redis, error) {
	bin, dir, err := redisServerIn(dir)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	lines := append([]string{"port " + strconv.Itoa(port), "bind 127.0.0.1", "dir " + dir,
		"logfile " + filepath.Join(dir, "sentinel.log")}, conf...)
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	r := &Redis{Port: port}
	r.Proc, err = Start("redis-sentinel", "", bin, os.Environ(), path, "--sentinel")
	if err != nil {
		return nil, err
	}
	if err := waitAnswer(ctx, r.Addr(), false, r.Proc, 10*time.Second); err != nil {
		r.Proc.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
		return nil, fmt.Errorf("redis sentinel on %s: %w\n%s", r.Addr(), err, log)
	}
	return r, nil
}

// redisServerIn finds redis-server and makes dir, its working directory,
// absolute (redis-server changes into --dir before it opens --logfile) and
// present.
func redisServerIn(dir string) (bin, absDir string, err error) {
	if bin, err = exec.LookPath("redis-server"); err != nil {
		return "", "", fmt.Errorf("redis-server not found: run `make setup` (apt-get install redis-server)")
	}
	if absDir, err = filepath.Abs(dir); err != nil {
		return "", "", err
	}
	return bin, absDir, os.MkdirAll(absDir, 0o755)
}
