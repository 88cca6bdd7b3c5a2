package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs the four files of
// Fashion-MNIST (apt-get install dataset-fashion-mnist).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// FashionMNISTClasses are the labels 0 to 9 of Fashion-MNIST.
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Images is a set of labelled grey-scale images in memory, as the IDX files of MNIST hold them:
// a Dataset whose rows are one image f32[1,H,W] and its label i64.
type Images struct {
	Name   string         // for messages: the images file, or what Slice made of it
	N      int            // number of examples
	Images *tensor.Tensor // f32[N,1,H,W], pixel/255 in [0,1] (PyTorch's ToTensor)
	Labels *tensor.Tensor // i64[N]
}

// Height and Width are the image size.
func (d *Images) Height() int { return d.Images.Type.Shape[2] }
func (d *Images) Width() int  { return d.Images.Type.Shape[3] }

// Len is the number of examples, N.
func (d *Images) Len() int { return d.N }

// String is the name, for messages.
func (d *Images) String() string { return d.Name }

// Rows gathers the images f32[len(rows),1,H,W] and labels i64[len(rows)] of rows.
func (d *Images) Rows(rows []int) (x, y *tensor.Tensor, err error) {
	px := d.Height() * d.Width()
	x, y = tensor.New(ir.T(ir.F32, len(rows), 1, d.Height(), d.Width())), tensor.New(ir.T(ir.I64, len(rows)))
	for k, r := range rows {
		if r < 0 || r >= d.N {
			return nil, nil, fmt.Errorf("data: %s: row %d of %d", d.Name, r, d.N)
		}
		copy(x.F[k*px:(k+1)*px], d.Images.F[r*px:(r+1)*px])
		y.I[k] = d.Labels.I[r]
	}
	return x, y, nil
}

// Slice returns the examples lo to hi-1, sharing no memory with d.
func (d *Images) Slice(lo, hi int) (*Images, error) {
	if lo < 0 || hi < lo || hi > d.N {
		return nil, fmt.Errorf("data: %s: slice [%d:%d] of %d examples", d.Name, lo, hi, d.N)
	}
	px := d.Height() * d.Width()
	s := &Images{
		Name:   fmt.Sprintf("%s[%d:%d]", d.Name, lo, hi),
		N:      hi - lo,
		Images: tensor.New(ir.T(ir.F32, hi-lo, 1, d.Height(), d.Width())),
		Labels: tensor.New(ir.T(ir.I64, hi-lo)),
	}
	copy(s.Images.F, d.Images.F[lo*px:hi*px])
	copy(s.Labels.I, d.Labels.I[lo:hi])
	return s, nil
}

// The file names of an MNIST-like directory, each read plain or with a .gz suffix.
const (
	TrainImages = "train-images-idx3-ubyte"
	TrainLabels = "train-labels-idx1-ubyte"
	TestImages  = "t10k-images-idx3-ubyte"
	TestLabels  = "t10k-labels-idx1-ubyte"
)

// FashionMNIST loads Fashion-MNIST from dir ("" means FashionMNISTDir) and checks that it is the
// real thing: 60000 training and 10000 test images of 28×28, labels 0 to 9.
func FashionMNIST(dir string) (train, test *Images, err error) { return FashionMNISTLimit(dir, 0) }

// FashionMNISTLimit is FashionMNIST keeping only the first limit examples of each split (all for
// 0), as LoadMNISTLimit does.
func FashionMNISTLimit(dir string, limit int) (train, test *Images, err error) {
	if dir == "" {
		dir = FashionMNISTDir
	}
	if train, test, err = LoadMNISTLimit(dir, limit); err != nil {
		if errors.Is(err, fs.ErrNotExist) && dir == FashionMNISTDir {
			err = fmt.Errorf("%w (install Fashion-MNIST with apt-get install dataset-fashion-mnist, or give its directory)", err)
		}
		return nil, nil, err
	}
	for _, c := range []struct {
		d *Images
		n int
	}{{train, 60000}, {test, 10000}} {
		if limit > 0 {
			c.n = min(c.n, limit)
		}
		if c.d.N != c.n || c.d.Height() != 28 || c.d.Width() != 28 {
			return nil, nil, fmt.Errorf("data: %s: %d images of %dx%d, Fashion-MNIST has %d of 28x28", c.d.Name, c.d.N, c.d.Height(), c.d.Width(), c.n)
		}
		for i, l := range c.d.Labels.I {
			if l >= int64(len(FashionMNISTClasses)) {
				return nil, nil, fmt.Errorf("data: %s: label %d is %d, Fashion-MNIST's are 0 to 9", c.d.Name, i, l)
			}
		}
	}
	return train, test, nil
}

// LoadMNIST loads the training and test sets of an MNIST-like directory (MNIST, Fashion-MNIST,
// KMNIST): the files TrainImages, TrainLabels, TestImages and TestLabels, each plain or
// gzip-compressed with a .gz suffix.
func LoadMNIST(dir string) (train, test *Images, err error) { return LoadMNISTLimit(dir, 0) }

// LoadMNISTLimit is LoadMNIST keeping only the first limit examples of each split (all for 0):
// the rest of each file is read and checked but never held, so memory follows limit, not what a
// file's header claims.
func LoadMNISTLimit(dir string, limit int) (train, test *Images, err error) {
	if train, err = loadPair(dir, TrainImages, TrainLabels, limit); err != nil {
		return nil, nil, err
	}
	if test, err = loadPair(dir, TestImages, TestLabels, limit); err != nil {
		return nil, nil, err
	}
	if train.Height() != test.Height() || train.Width() != test.Width() {
		return nil, nil, fmt.Errorf("data: %s: training images are %dx%d, test images %dx%d",
			dir, train.Height(), train.Width(), test.Height(), test.Width())
	}
	return train, test, nil
}

func loadPair(dir, images, labels string, limit int) (*Images, error) {
	ip, err := find(dir, images)
	if err != nil {
		return nil, err
	}
	lp, err := find(dir, labels)
	if err != nil {
		return nil, err
	}
	return LoadLimit(ip, lp, limit)
}

// find returns dir/name, or dir/name.gz when only that exists.
func find(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	for _, c := range []string{p, p + ".gz"} {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("data: %w", err)
	}
	return "", fmt.Errorf("data: %s: neither %s nor %s.gz exists: %w", dir, name, name, fs.ErrNotExist)
}

// Load reads one split from an images file (u8[N,H,W]) and a labels file (u8[N]).
func Load(imagesPath, labelsPath string) (*Images, error) {
	return LoadLimit(imagesPath, labelsPath, 0)
}

// LoadLimit is Load keeping only the first limit examples (all for 0).
func LoadLimit(imagesPath, labelsPath string, limit int) (*Images, error) {
	im, err := ReadIDXFileLimit(imagesPath, limit)
	if err != nil {
		return nil, err
	}
	lb, err := ReadIDXFileLimit(labelsPath, limit)
	if err != nil {
		return nil, err
	}
	if im.Type != U8 || len(im.Dims) != 3 {
		return nil, fmt.Errorf("data: %s: holds %s%v, want images u8[N,H,W]", imagesPath, im.Type, im.Dims)
	}
	if lb.Type != U8 || len(lb.Dims) != 1 {
		return nil, fmt.Errorf("data: %s: holds %s%v, want labels u8[N]", labelsPath, lb.Type, lb.Dims)
	}
	n, h, w := im.Dims[0], im.Dims[1], im.Dims[2]
	if lb.Dims[0] != n {
		return nil, fmt.Errorf("data: %s has %d labels, %s has %d images", labelsPath, lb.Dims[0], imagesPath, n)
	}
	if h == 0 || w == 0 {
		return nil, fmt.Errorf("data: %s: images of %dx%d pixels", imagesPath, h, w)
	}
	d := &Images{
		Name:   imagesPath,
		N:      n,
		Images: tensor.New(ir.T(ir.F32, n, 1, h, w)),
		Labels: tensor.New(ir.T(ir.I64, n)),
	}
	for i, p := range im.Data {
		d.Images.F[i] = pixel[p]
	}
	for i, l := range lb.Data {
		d.Labels.I[i] = int64(l)
	}
	return d, nil
}

// Targets gathers the labels i64[len(rows)] of rows.
func (d *Images) Targets(rows []int) (*tensor.Tensor, error) {
	y := tensor.New(ir.T(ir.I64, len(rows)))
	for k, r := range rows {
		if r < 0 || r >= d.N {
			return nil, fmt.Errorf("data: %s: row %d of %d", d.Name, r, d.N)
		}
		y.I[k] = d.Labels.I[r]
	}
	return y, nil
}

// pixel maps a byte to its f32 value in [0,1], rounded as PyTorch's ToTensor rounds it
// (a float32 division by 255).
var pixel = func() (t [256]float64) {
	for i := range t {
		t[i] = float64(float32(i) / 255)
	}
	return t
}()
