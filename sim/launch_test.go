package sim

import (
	"testing"
)

func TestSaxpy(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "saxpy.ptx")
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), float32(2*i)
	}
	dx, dy := upload(t, dev, f32sBytes(x)), upload(t, dev, f32sBytes(y))
	st, err := m.Launch("saxpy", grid(4, 256), dx, dy, float32(3), uint32(n))
	if err != nil {
		t.Fatal(err)
	}
	got := bytesF32s(download(t, dev, dy, 4*n))
	for i := range got {
		if want := 3*x[i] + y[i]; got[i] != want {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
	if st.Blocks != 4 || st.GlobalLoadBytes != 2*4*n || st.GlobalStoreBytes != 4*n {
		t.Errorf("stats: %+v", st)
	}
	// Each full warp reads 128 contiguous bytes: 4 sectors.
	if st.GlobalLoadSectors != 2*(n/32*4+1) {
		t.Errorf("load sectors %d, want %d", st.GlobalLoadSectors, 2*(n/32*4+1))
	}
	t.Log("\n" + st.String())
}
