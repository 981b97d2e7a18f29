// dx by the shipped formula and by the fma one, in float, against double, on rows like the
// harness's (large mean, outlier first element); per-element max abs error relative to max |dx|.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
int main() {
  std::mt19937 rng(7);
  struct Case { const char *name; double mean, sd, first; int n; };
  Case cases[] = {{"plain", 0, 1, NAN, 4096}, {"mean1e4 sd1e-2", 1e4, 1e-2, NAN, 4096},
                  {"first +6sd", 0, 1, 6, 4096}, {"first 1e3 vs sd1", 0, 1, 1e3, 4096},
                  {"mean1e4 first+6sd", 1e4, 1e-2, 1e4 + 0.06, 1000}};
  for (auto &c : cases) {
    double worst[2] = {0, 0};
    for (int rep = 0; rep < 200; ++rep) {
      std::normal_distribution<double> nx(c.mean, c.sd), ng(0, 1);
      std::vector<float> x(c.n), g(c.n);
      for (int i = 0; i < c.n; ++i) { x[i] = (float)nx(rng); g[i] = (float)ng(rng); }
      if (!std::isnan(c.first)) x[0] = (float)c.first;
      // double reference
      double m = 0; for (float v : x) m += v; m /= c.n;
      double var = 0; for (float v : x) var += (v - m) * (v - m); var /= c.n;
      double rs = 1 / std::sqrt(var + 1e-5), mg = 0, mgx = 0;
      for (int i = 0; i < c.n; ++i) { mg += g[i]; mgx += g[i] * (x[i] - m) * rs; }
      mg /= c.n; mgx /= c.n;
      // float, as the kernel: shift = x[0], mean of d, sums around the mean
      float sh = x[0], ma = 0; for (float v : x) ma += v - sh; ma /= c.n;
      float s0 = 0, s1 = 0, s2 = 0;
      for (int i = 0; i < c.n; ++i) { float d = (x[i] - sh) - ma; s0 += d * d; s1 += g[i]; s2 += g[i] * d; }
      float rsa = 1.f / std::sqrt(s0 / c.n + 1e-5f), mga = s1 / c.n, mgxa = s2 * rsa / c.n;
      float nmr = -ma * rsa, kx = -rsa * mgxa, k0 = -rsa * mga;
      double maxdx = 0, err[2] = {0, 0};
      for (int i = 0; i < c.n; ++i) {
        double ref = rs * (g[i] - mg - (x[i] - m) * rs * mgx);
        float xh = ((x[i] - sh) - ma) * rsa, dx0 = rsa * (g[i] - mga - xh * mgxa);
        float xh2 = std::fma(x[i] - sh, rsa, nmr), dx1 = std::fma(rsa, g[i], std::fma(kx, xh2, k0));
        maxdx = std::fmax(maxdx, std::fabs(ref));
        err[0] = std::fmax(err[0], std::fabs(dx0 - ref)); err[1] = std::fmax(err[1], std::fabs(dx1 - ref));
      }
      for (int k = 0; k < 2; ++k) worst[k] = std::fmax(worst[k], err[k] / maxdx);
    }
    printf("%-20s shipped %.3e  fma %.3e  (max |dx err| / max |dx|, worst of 200 rows)\n", c.name, worst[0], worst[1]);
  }
}
