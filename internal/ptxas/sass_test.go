package ptxas

import "testing"

// TestSASSOps: the opcode mix of a kernel with one predicated store and one mma.sync counts an
// HMMA, a predicated STG under its opcode, and sums to SASS's count.
func TestSASSOps(t *testing.T) {
	Require(t)
	ptx := `.version 7.8
.target sm_80
.address_size 64
.visible .entry mix(.param .u64 p)
{
	.reg .b32 %r<12>;
	.reg .f32 %f<9>;
	.reg .b64 %rd<3>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 7;
	ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd1];
	ld.global.v2.b32 {%r6, %r7}, [%rd1+16];
	mov.f32 %f1, 0f00000000;
	mov.f32 %f2, 0f00000000;
	mov.f32 %f3, 0f00000000;
	mov.f32 %f4, 0f00000000;
	mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r2, %r3, %r4, %r5}, {%r6, %r7}, {%f1, %f2, %f3, %f4};
	@%p1 st.global.v4.f32 [%rd1], {%f5, %f6, %f7, %f8};
	ret;
}
`
	res, cubin, err := AssembleCubin([]byte(ptx), "sm_80")
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Log)
	}
	ops, err := SASSOps(cubin)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := SASS(cubin)
	if err != nil {
		t.Fatal(err)
	}
	mix := ops["mix"]
	sum := 0
	for _, n := range mix {
		sum += n
	}
	if mix["HMMA"] != 1 || mix["STG"] != 1 || mix["?"] != 0 || sum != counts["mix"] {
		t.Errorf("mix %v (sum %d), SASS count %d: want one HMMA, one STG, every line named", mix, sum, counts["mix"])
	}
}
