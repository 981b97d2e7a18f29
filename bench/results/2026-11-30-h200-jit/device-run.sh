export PATH=/usr/local/cuda-13.0/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64;R=$PWD;L=$OUT/log;cd candle-patch/candle-kernels;{ date -u;nvcc --version|tail -1;git -C $R log --oneline -1 ; }>$L 2>&1
G="";for a in 80 86 89 90;do G="$G -gencode=arch=compute_$a,code=sm_$a";done;F="--default-stream per-thread -Isrc";mkdir -p /tmp/p
(/usr/bin/time -f "fatbin %e s %U s user" nvcc --fatbin -Xfatbin -compress-all $G -gencode=arch=compute_90,code=compute_90 -t0 $F -o /tmp/ln.fatbin src/layer_norm.cu>>$L 2>&1)&
for f in src/*.cu;do b=${f#src/};nvcc -arch=sm_90 --ptx $F -o /tmp/p/${b%.cu}.ptx $f& done
nvcc --fatbin -gencode=arch=compute_80,code=sm_80 $F -o /tmp/a80.fatbin src/affine.cu;wait
cat >/tmp/l.py<<'E'
import ctypes as C,time,sys,os
cu=C.CDLL('libcuda.so.1');B=C.byref;T=time.perf_counter
d=C.c_int();c=C.c_void_p();cu.cuInit(0);cu.cuDeviceGet(B(d),0);cu.cuDevicePrimaryCtxRetain(B(c),d);cu.cuCtxSetCurrent(c);s=0
for p in sys.argv[1:]:
 if p.endswith('.fatbin'):t=T();q=f'/tmp/c{os.getpid()}';open(q,'wb').write(open(p,'rb').read());print(f' copy {1e3*(T()-t):.1f} ms')
 m=C.c_void_p();f=C.c_void_p();t=T();r=cu.cuModuleLoad(B(m),p.encode());t1=T();s+=t1-t
 r2=cu.cuModuleGetFunction(B(f),m,b'layernorm_bwd_reduce_f32') if 'ln' in p or '_n' in p else 0
 print(f'{p} {os.path.getsize(p)} B: load {1e3*(t1-t):.1f} ms rc {r}, get {1e3*(T()-t1):.1f} ms {r2}',flush=True)
print(f'total {1e3*s:.1f} ms')
E
{ echo "== cold";CUDA_CACHE_DISABLE=1 python3 /tmp/l.py /tmp/ln.fatbin /tmp/a80.fatbin /tmp/p/*.ptx
echo "== cold, force PTX JIT";CUDA_CACHE_DISABLE=1 CUDA_FORCE_PTX_JIT=1 python3 /tmp/l.py /tmp/ln.fatbin
mkdir /tmp/b;tar -C /tmp/b -xJf $R/.gpu/bins.tar.xz;cd $R
for m in cold populate warm;do echo "== main tft 1 epoch $m";[ $m = cold ]&&export CUDA_CACHE_DISABLE=1||unset CUDA_CACHE_DISABLE;/usr/bin/time -f "%e s" timeout 200 /tmp/b/bins/tft-bin-tft --device cuda --epochs 1 --layer-norm kernel --quiet 2>&1;done; }>>$L 2>&1;cat $L
