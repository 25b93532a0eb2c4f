package render

import (
	"slices"
	"testing"
)

// TestNiceCommand_Wrap: the browser's command line starts with setpriv's
// drop of CAP_SYS_NICE where one was found, then nice(1) at the value, then
// the browser and its arguments unchanged.
func TestNiceCommand_Wrap(t *testing.T) {
	argv := []string{"/usr/lib/chromium/chromium-headless-shell", "--headless", "--no-sandbox"}
	tests := []struct {
		name string
		c    niceCommand
		want []string
	}{
		{"no capability to drop", niceCommand{nice: "/usr/bin/nice"},
			append([]string{"/usr/bin/nice", "-n", "10"}, argv...)},
		{"root", niceCommand{nice: "/usr/bin/nice", setpriv: []string{"/usr/bin/setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--"}},
			append([]string{"/usr/bin/setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--", "/usr/bin/nice", "-n", "10"}, argv...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.wrap(10, argv); !slices.Equal(got, tt.want) {
				t.Errorf("wrap = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFindNiceCommand_DropsTheCapabilityItHolds: the command drops
// CAP_SYS_NICE exactly when this process holds it (as root it does).
func TestFindNiceCommand_DropsTheCapabilityItHolds(t *testing.T) {
	eff, err := effectiveCaps()
	if err != nil {
		t.Fatal(err)
	}
	c, err := findNiceCommand()
	if err != nil {
		t.Fatal(err)
	}
	holds := eff&(1<<capSysNice) != 0
	if got := len(c.setpriv) > 0; got != holds {
		t.Errorf("setpriv in front: %v, CAP_SYS_NICE held: %v (CapEff %x)", got, holds, eff)
	}
	if holds && !slices.Contains(c.setpriv, "--inh-caps=-sys_nice") {
		t.Errorf("setpriv %q does not drop the inheritable (and so the ambient) capability", c.setpriv)
	}
}
