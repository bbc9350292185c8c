package gateway

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-gw/tollgate/core/config"
)

// The supervisors of docs/deploy wait out a whole stop: the systemd unit's
// TimeoutStopSec and the compose file's stop_grace_period exceed the
// drain bound plus the settling after it (stopBound), so a stop never
// SIGKILLs a gateway that is still settling its calls.
func TestSupervisorsWaitOutAStop(t *testing.T) {
	drain := config.Default(func(string) string { return "" }).Server.DrainTimeout
	if drain <= 0 {
		drain = config.DefaultDrainTimeout
	}
	bound := stopBound(drain)
	if bound < drain+30*time.Second {
		t.Fatalf("stopBound(%s) = %s leaves no time to settle", drain, bound)
	}
	dir := filepath.Join("..", "..", "docs", "deploy")

	unit, err := os.ReadFile(filepath.Join(dir, "tollgate.service"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(.+)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatalf("tollgate.service sets no TimeoutStopSec (systemd's default, 90 s, is not the unit's to rely on); want above %s", bound)
	}
	if d := systemdSpan(t, string(m[1])); d <= bound {
		t.Errorf("tollgate.service: TimeoutStopSec=%s, want above %s (drain_timeout %s plus settling)", m[1], bound, drain)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			StopGracePeriod string `yaml:"stop_grace_period"`
		}
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	if len(compose.Services) == 0 {
		t.Fatal("compose.yaml has no services")
	}
	for name, svc := range compose.Services {
		// Without it compose waits 10 s, then SIGKILLs.
		d, err := time.ParseDuration(svc.StopGracePeriod)
		if err != nil || d <= bound {
			t.Errorf("compose.yaml: service %s has stop_grace_period %q, want above %s (drain_timeout %s plus settling)", name, svc.StopGracePeriod, bound, drain)
		}
	}
}

// systemdSpan reads a systemd time span of the forms a unit uses: "90",
// "90s", "1min 30s", "2min".
func systemdSpan(t *testing.T, s string) time.Duration {
	t.Helper()
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(strings.ReplaceAll(strings.ReplaceAll(s, "min", "m"), " ", ""))
	if err != nil {
		t.Fatalf("time span %q: %v", s, err)
	}
	return d
}
