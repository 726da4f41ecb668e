// kiln's complex numbers for raw kernels: `complex<T>` (T = float or double), laid out as
// NumPy's complex64/complex128 (real then imaginary part, aligned to its size), with the
// arithmetic, comparisons and functions of CuPy's `<cupy/complex.cuh>` that kernels use most.
// Given to NVRTC in memory as `<kiln/complex.cuh>` and, for CuPy's code as written, as
// `<cupy/complex.cuh>`.
#ifndef KILN_COMPLEX_CUH
#define KILN_COMPLEX_CUH

template <typename T>
struct alignas(2 * sizeof(T)) complex {
  T re_;
  T im_;

  __host__ __device__ complex(const T& re = T(), const T& im = T()) : re_(re), im_(im) {}
  template <typename U>
  __host__ __device__ explicit complex(const complex<U>& z) : re_(T(z.real())), im_(T(z.imag())) {}

  __host__ __device__ T real() const { return re_; }
  __host__ __device__ T imag() const { return im_; }
  __host__ __device__ void real(T re) { re_ = re; }
  __host__ __device__ void imag(T im) { im_ = im; }

  __host__ __device__ complex& operator+=(const complex& z) { re_ += z.re_; im_ += z.im_; return *this; }
  __host__ __device__ complex& operator-=(const complex& z) { re_ -= z.re_; im_ -= z.im_; return *this; }
  __host__ __device__ complex& operator*=(const complex& z) { return *this = *this * z; }
  __host__ __device__ complex& operator/=(const complex& z) { return *this = *this / z; }
  __host__ __device__ complex& operator+=(const T& x) { re_ += x; return *this; }
  __host__ __device__ complex& operator-=(const T& x) { re_ -= x; return *this; }
  __host__ __device__ complex& operator*=(const T& x) { re_ *= x; im_ *= x; return *this; }
  __host__ __device__ complex& operator/=(const T& x) { re_ /= x; im_ /= x; return *this; }

  friend __host__ __device__ complex operator+(const complex& a, const complex& b) { return complex(a.re_ + b.re_, a.im_ + b.im_); }
  friend __host__ __device__ complex operator-(const complex& a, const complex& b) { return complex(a.re_ - b.re_, a.im_ - b.im_); }
  friend __host__ __device__ complex operator*(const complex& a, const complex& b) {
    return complex(a.re_ * b.re_ - a.im_ * b.im_, a.re_ * b.im_ + a.im_ * b.re_);
  }
  // Smith's algorithm: no overflow of |b|^2 for large operands.
  friend __host__ __device__ complex operator/(const complex& a, const complex& b) {
    if (fabs(b.re_) >= fabs(b.im_)) {
      T r = b.im_ / b.re_, d = b.re_ + b.im_ * r;
      return complex((a.re_ + a.im_ * r) / d, (a.im_ - a.re_ * r) / d);
    }
    T r = b.re_ / b.im_, d = b.re_ * r + b.im_;
    return complex((a.re_ * r + a.im_) / d, (a.im_ * r - a.re_) / d);
  }
  friend __host__ __device__ complex operator+(const complex& a, const T& x) { return complex(a.re_ + x, a.im_); }
  friend __host__ __device__ complex operator+(const T& x, const complex& a) { return complex(x + a.re_, a.im_); }
  friend __host__ __device__ complex operator-(const complex& a, const T& x) { return complex(a.re_ - x, a.im_); }
  friend __host__ __device__ complex operator-(const T& x, const complex& a) { return complex(x - a.re_, -a.im_); }
  friend __host__ __device__ complex operator*(const complex& a, const T& x) { return complex(a.re_ * x, a.im_ * x); }
  friend __host__ __device__ complex operator*(const T& x, const complex& a) { return complex(x * a.re_, x * a.im_); }
  friend __host__ __device__ complex operator/(const complex& a, const T& x) { return complex(a.re_ / x, a.im_ / x); }
  friend __host__ __device__ complex operator/(const T& x, const complex& a) { return complex(x) / a; }
  friend __host__ __device__ complex operator+(const complex& a) { return a; }
  friend __host__ __device__ complex operator-(const complex& a) { return complex(-a.re_, -a.im_); }
  friend __host__ __device__ bool operator==(const complex& a, const complex& b) { return a.re_ == b.re_ && a.im_ == b.im_; }
  friend __host__ __device__ bool operator!=(const complex& a, const complex& b) { return !(a == b); }
  friend __host__ __device__ bool operator==(const complex& a, const T& x) { return a.re_ == x && a.im_ == T(0); }
  friend __host__ __device__ bool operator!=(const complex& a, const T& x) { return !(a == x); }
};

template <typename T> __host__ __device__ T real(const complex<T>& z) { return z.real(); }
template <typename T> __host__ __device__ T imag(const complex<T>& z) { return z.imag(); }
template <typename T> __host__ __device__ complex<T> conj(const complex<T>& z) { return complex<T>(z.real(), -z.imag()); }
template <typename T> __host__ __device__ T norm(const complex<T>& z) { return z.real() * z.real() + z.imag() * z.imag(); }
template <typename T> __host__ __device__ T abs(const complex<T>& z) { return hypot(z.real(), z.imag()); }
template <typename T> __host__ __device__ T arg(const complex<T>& z) { return atan2(z.imag(), z.real()); }
template <typename T> __host__ __device__ complex<T> polar(const T& r, const T& theta = T()) {
  return complex<T>(r * cos(theta), r * sin(theta));
}
template <typename T> __host__ __device__ complex<T> exp(const complex<T>& z) { return polar(T(exp(z.real())), z.imag()); }
template <typename T> __host__ __device__ complex<T> log(const complex<T>& z) { return complex<T>(log(abs(z)), arg(z)); }
template <typename T> __host__ __device__ complex<T> sqrt(const complex<T>& z) {
  // Principal root: sqrt(|z|) at half the argument, computed without cancellation.
  T a = abs(z);
  if (a == T(0)) return complex<T>(T(0), z.imag());
  T t = sqrt((a + fabs(z.real())) / T(2));
  if (z.real() >= T(0)) return complex<T>(t, z.imag() / (T(2) * t));
  return complex<T>(fabs(z.imag()) / (T(2) * t), copysign(t, z.imag()));
}
template <typename T> __host__ __device__ complex<T> pow(const complex<T>& z, const complex<T>& w) {
  return (z == T(0)) ? complex<T>(w == T(0) ? T(1) : T(0)) : exp(w * log(z));
}
template <typename T> __host__ __device__ complex<T> pow(const complex<T>& z, const T& x) { return pow(z, complex<T>(x)); }

#endif  // KILN_COMPLEX_CUH
