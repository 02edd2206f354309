package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// num prints a capacity figure with at most two decimals and thousands
// separators: 200 WCU over 11 partitions is "18.18", not
// 18.181818181818183, and 11000 is "11,000".
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if sign+b.String() == "-0" && frac == "" {
		return "0"
	}
	if frac != "" {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// plural prints n and the noun, plural unless n is 1: "1 partition",
// "2 partitions". Nouns ending in y take "ies" ("Query", "Queries").
func plural(n int, noun string) string { return plural64(int64(n), noun) }

func plural64(n int64, noun string) string {
	c := num(float64(n))
	switch {
	case n == 1:
		return c + " " + noun
	case strings.HasSuffix(noun, "y"):
		return c + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return c + " " + noun + "s"
}

// fmtDuration prints d without zero units: "30m", "3h", "2h46m40s".
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	d = d.Round(time.Second)
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	var b strings.Builder
	for _, u := range []struct {
		v    int64
		unit string
	}{{h, "h"}, {m, "m"}, {s, "s"}} {
		if u.v != 0 {
			fmt.Fprintf(&b, "%d%s", u.v, u.unit)
		}
	}
	return b.String()
}

// byteSize is a flag value in bytes that needs a unit: B, KB, MB, GB, TB,
// or KiB, MiB, GiB, TiB, all powers of 1024 as DynamoDB's "10 GB per
// partition" and its 1 KB write unit are. A bare number is refused, so
// that "-size 20" cannot mean 20 bytes by mistake.
type byteSize int64

// sizeUnits are byteSize's units, longest suffixes first.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
	{"B", 1},
}

// errBareNumber is the reason a size without a unit is refused.
var errBareNumber = errors.New("a size needs a unit, e.g. 20GB (B, KB, MB, GB, TB or KiB, MiB, GiB, TiB; all powers of 1024)")

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0 B"
	}
	v := float64(*b)
	for _, u := range []string{"B", "KB", "MB", "GB"} {
		if v < 1024 {
			return num(v) + " " + u
		}
		v /= 1024
	}
	return num(v) + " TB"
}

func (b *byteSize) Set(s string) error {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(0)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult, t = u.mult, strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	switch {
	case err == nil && mult == 0:
		return fmt.Errorf("%q: %w", s, errBareNumber)
	case err != nil || mult == 0:
		return fmt.Errorf("%q is not a size: %w", s, errBareNumber)
	case !(v >= 0) || v*float64(mult) > 1<<62:
		return fmt.Errorf("%q: want a size from 0 B to 4 EiB", s)
	}
	*b = byteSize(math.Round(v * float64(mult)))
	return nil
}

// splitList is the repeatable -split flag: partition indexes, in order.
type splitList []int

func (l *splitList) String() string {
	if l == nil {
		return ""
	}
	return strings.Trim(fmt.Sprint([]int(*l)), "[]")
}

func (l *splitList) Set(s string) error {
	i, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || i < 0 {
		return fmt.Errorf("%q: want a partition index, 0 or more", s)
	}
	*l = append(*l, i)
	return nil
}
