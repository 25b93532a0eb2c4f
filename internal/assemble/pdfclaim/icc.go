package pdfclaim

import (
	"encoding/binary"
	"math"
	"sync"
)

// SRGBProfile is an ICC version 2 display profile of sRGB, made here so
// that a worker needs no profile file: the D50-adapted primaries and the
// sRGB transfer curve of IEC 61966-2-1, sampled at 1024 points.
var SRGBProfile = sync.OnceValue(func() []byte {
	type tag struct {
		sig  string
		data []byte
	}
	s15 := func(f float64) []byte {
		return binary.BigEndian.AppendUint32(nil, uint32(int32(math.Round(f*65536))))
	}
	xyz := func(x, y, z float64) []byte {
		b := append([]byte("XYZ "), 0, 0, 0, 0)
		b = append(b, s15(x)...)
		b = append(b, s15(y)...)
		return append(b, s15(z)...)
	}
	const points = 1024
	curve := append([]byte("curv"), 0, 0, 0, 0)
	curve = binary.BigEndian.AppendUint32(curve, points)
	for i := range points {
		v := float64(i) / (points - 1)
		if v <= 0.04045 {
			v /= 12.92
		} else {
			v = math.Pow((v+0.055)/1.055, 2.4)
		}
		curve = binary.BigEndian.AppendUint16(curve, uint16(math.Round(v*65535)))
	}
	desc := append([]byte("desc"), 0, 0, 0, 0)
	desc = binary.BigEndian.AppendUint32(desc, uint32(len(SRGBName)+1))
	desc = append(desc, SRGBName...)
	desc = append(desc, 0)
	desc = append(desc, make([]byte, 4+4+2+1+67)...) // no Unicode or ScriptCode description
	text := append([]byte("text"), 0, 0, 0, 0)
	text = append(text, "No copyright, use freely"...)
	text = append(text, 0)
	tags := []tag{
		{"desc", desc},
		{"cprt", text},
		{"wtpt", xyz(0.9642, 1, 0.8249)},
		{"rXYZ", xyz(0.4361, 0.2225, 0.0139)},
		{"gXYZ", xyz(0.3851, 0.7169, 0.0971)},
		{"bXYZ", xyz(0.1431, 0.0606, 0.7141)},
		{"rTRC", curve},
		{"gTRC", curve},
		{"bTRC", curve},
	}
	header := make([]byte, 128)
	binary.BigEndian.PutUint32(header[8:], 0x02100000) // version 2.1
	copy(header[12:], "mntr")
	copy(header[16:], "RGB ")
	copy(header[20:], "XYZ ")
	binary.BigEndian.PutUint16(header[24:], 2000) // date: 2000-01-01
	binary.BigEndian.PutUint16(header[26:], 1)
	binary.BigEndian.PutUint16(header[28:], 1)
	copy(header[36:], "acsp")
	copy(header[68:], s15(0.9642)) // the PCS illuminant, D50
	copy(header[72:], s15(1))
	copy(header[76:], s15(0.8249))
	table := binary.BigEndian.AppendUint32(nil, uint32(len(tags)))
	offset := 128 + 4 + 12*len(tags)
	var data []byte
	at := map[string]int{} // one copy of data several tags share
	for _, t := range tags {
		o, shared := at[string(t.data)]
		if !shared {
			o = offset + len(data)
			at[string(t.data)] = o
			data = append(data, t.data...)
			for len(data)%4 != 0 {
				data = append(data, 0)
			}
		}
		table = append(table, t.sig...)
		table = binary.BigEndian.AppendUint32(table, uint32(o))
		table = binary.BigEndian.AppendUint32(table, uint32(len(t.data)))
	}
	out := append(header, table...)
	out = append(out, data...)
	binary.BigEndian.PutUint32(out[0:], uint32(len(out)))
	return out
})
