package procstat_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/procstat"
)

func TestParse(t *testing.T) {
	// A real line (this kernel, a container's init while it exits), fields
	// 23-52 zeroed.
	tail := strings.Repeat(" 0", 30)
	tests := []struct {
		name    string
		line    string
		want    procstat.Stat
		wantErr bool
	}{
		{name: "exiting init", line: "2280 (sh) S 2279 2278 100 0 -1 4194316 120 0 0 0 1 0 0 0 20 0 1 0 73050" + tail,
			want: procstat.Stat{State: 'S', PPid: 2279, Flags: 0x40000c, StartTime: 73050}},
		{name: "comm with spaces and parentheses", line: "7 (a) b (c)) Z 1 7 7 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 99" + tail,
			want: procstat.Stat{State: 'Z', PPid: 1, Flags: 0x400000, StartTime: 99}},
		{name: "cut short", line: "7 (sh) S 1 7", wantErr: true},
		{name: "no comm", line: "7 sh S 1", wantErr: true},
		{name: "flags not a number", line: "7 (sh) S 1 7 7 0 -1 x 0 0 0 0 0 0 0 0 20 0 1 0 99" + tail, wantErr: true},
		{name: "empty", line: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := procstat.Parse([]byte(tc.line + "\n"))
			if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
				t.Fatalf("Parse = %+v, %v; want %+v (error: %v)", got, err, tc.want, tc.wantErr)
			}
			if tc.want.Flags&procstat.FlagExiting != 0 != (tc.name == "exiting init") {
				t.Fatalf("FlagExiting read wrong for %q", tc.name)
			}
		})
	}
}
