# region 0: scatter, optimized tier
	.file	"LLVMDialectModule"
	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
.LCPI0_0:
	.quad	0
	.quad	2
	.quad	4
	.quad	6
	.quad	8
	.quad	10
	.quad	12
	.quad	14
.LCPI0_1:
	.quad	1
	.quad	3
	.quad	5
	.quad	7
	.quad	9
	.quad	11
	.quad	13
	.quad	15
.LCPI0_2:
	.quad	0
	.quad	2
	.quad	4
	.quad	6
	.quad	12
	.quad	13
	.quad	14
	.quad	15
.LCPI0_3:
	.quad	1
	.quad	3
	.quad	5
	.quad	7
	.quad	12
	.quad	13
	.quad	14
	.quad	15
.LCPI0_4:
	.long	0
	.long	2
	.long	4
	.long	6
	.long	8
	.long	10
	.long	12
	.long	14
	.long	16
	.long	18
	.zero	4
	.zero	4
	.zero	4
	.zero	4
	.zero	4
	.zero	4
.LCPI0_5:
	.long	1
	.long	3
	.long	5
	.long	7
	.long	9
	.long	11
	.long	13
	.long	15
	.long	17
	.long	19
	.zero	4
	.zero	4
	.zero	4
	.zero	4
	.zero	4
	.zero	4
.LCPI0_15:
	.quad	0x0000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.section	.rodata.cst32,"aM",@progbits,32
	.p2align	5, 0x0
.LCPI0_6:
	.long	24
	.long	25
	.long	0
	.long	0
	.long	0
	.long	0
	.long	0
	.long	0
.LCPI0_8:
	.short	0
	.short	1
	.short	2
	.short	3
	.short	4
	.short	5
	.short	6
	.short	7
	.short	8
	.short	9
	.short	10
	.short	11
	.short	12
	.short	13
	.short	14
	.short	15
	.section	.rodata.cst4,"aM",@progbits,4
	.p2align	2, 0x0
.LCPI0_7:
	.long	0x7f800000
.LCPI0_9:
	.long	2147483647
.LCPI0_10:
	.long	0x3f7fff70
.LCPI0_11:
	.long	0x83800000
.LCPI0_12:
	.long	0x3f800048
.LCPI0_13:
	.long	0x03800000
	.section	.rodata.cst8,"aM",@progbits,8
	.p2align	3, 0x0
.LCPI0_14:
	.quad	0x8000000000000000
	.section	.ltext,"axl",@progbits
	.globl	kiln_kernel_host
	.p2align	4
	.type	kiln_kernel_host,@function
kiln_kernel_host:
	pushq	%rbp
	pushq	%r15
	pushq	%r14
	pushq	%r13
	pushq	%r12
	pushq	%rbx
	subq	$3112, %rsp
	movq	(%rdi), %rax
	movq	8(%rdi), %rsi
	movq	16(%rdi), %r8
	movq	24(%rdi), %rdi
	movq	%rcx, %r11
	subq	%rdx, %r11
	movq	%rcx, -112(%rsp)
	movq	%rdx, -120(%rsp)
	movq	%r11, -104(%rsp)
	andq	$-2, %r11
	addq	%rdx, %r11
	cmpq	%r11, %rdx
	jge	.LBB0_13
	vmovups	2048(%rsi), %zmm3
	vmovups	2304(%rsi), %zmm4
	movq	-120(%rsp), %r10
	vmovups	1792(%rsi), %zmm0
	movabsq	$.LCPI0_8, %r9
	vmovups	(%rsi), %zmm22
	vmovups	64(%rsi), %zmm23
	vmovups	128(%rsi), %zmm24
	vmovups	192(%rsi), %zmm25
	vmovups	256(%rsi), %zmm26
	vmovups	512(%rsi), %zmm27
	vmovups	768(%rsi), %zmm28
	vmovups	1024(%rsi), %zmm29
	vmovups	1280(%rsi), %zmm30
	vmovups	1536(%rsi), %zmm31
	vmovups	1984(%rsi), %zmm5
	vmovups	2240(%rsi), %zmm6
	vmovups	2496(%rsi), %zmm7
	leaq	2336(%rsi), %r15
	movl	$9, %ecx
	vxorpd	%xmm8, %xmm8, %xmm8
	vxorps	%xmm10, %xmm10, %xmm10
	vmovaps	(%r9), %ymm12
	movabsq	$.LCPI0_9, %r9
	vbroadcastss	(%r9), %zmm11
	movq	%r10, %rdx
	shlq	$8, %rdx
	leaq	32(%rdx,%rax), %r14
	leaq	288(%rdx,%rax), %r13
	movw	$-1024, %dx
	kmovd	%edx, %k1
	kmovd	%edx, %k2
	movabsq	$.LCPI0_0, %rdx
	vmovups	%zmm3, 2976(%rsp)
	vmovups	320(%rsi), %zmm3
	vmovups	%zmm4, 2912(%rsp)
	vmovups	576(%rsi), %zmm4
	vmovaps	(%rdx), %zmm9
	movabsq	$.LCPI0_1, %rdx
	vmovups	%zmm0, 3040(%rsp)
	vmovups	%zmm22, 480(%rsp)
	vmovups	%zmm23, 416(%rsp)
	vmovups	%zmm24, 352(%rsp)
	vmovups	%zmm25, 288(%rsp)
	vmovups	%zmm26, 224(%rsp)
	vmovups	%zmm27, 160(%rsp)
	vmovups	%zmm28, 96(%rsp)
	vmovups	%zmm29, 32(%rsp)
	vmovups	%zmm30, -32(%rsp)
	vmovups	%zmm31, -96(%rsp)
	vmovups	%ymm12, 928(%rsp)
	vmovups	%zmm11, 864(%rsp)
	vmovups	%zmm3, 2848(%rsp)
	vmovups	832(%rsi), %zmm3
	vmovups	%zmm4, 2784(%rsp)
	vmovups	1088(%rsi), %zmm4
	vmovups	%zmm9, 1376(%rsp)
	vmovups	%zmm3, 2720(%rsp)
	vmovups	1344(%rsi), %zmm3
	vmovups	%zmm4, 2656(%rsp)
	vmovups	1600(%rsi), %zmm4
	vmovups	%zmm3, 2592(%rsp)
	vmovups	1856(%rsi), %zmm3
	vmovups	%zmm4, 2528(%rsp)
	vmovups	2112(%rsi), %zmm4
	vmovups	%zmm3, 2464(%rsp)
	vmovups	2368(%rsi), %zmm3
	vmovups	%zmm4, 2400(%rsp)
	vmovups	384(%rsi), %zmm4
	vmovups	%zmm3, 2336(%rsp)
	vmovups	640(%rsi), %zmm3
	vmovups	%zmm4, 2272(%rsp)
	vmovups	896(%rsi), %zmm4
	vmovups	%zmm3, 2208(%rsp)
	vmovups	1152(%rsi), %zmm3
	vmovups	%zmm4, 2144(%rsp)
	vmovups	1408(%rsi), %zmm4
	vmovups	%zmm3, 2080(%rsp)
	vmovups	1664(%rsi), %zmm3
	vmovups	%zmm4, 2016(%rsp)
	vmovups	1920(%rsi), %zmm4
	vmovups	%zmm3, 1952(%rsp)
	vmovups	2176(%rsi), %zmm3
	vmovups	%zmm4, 1888(%rsp)
	vmovups	2432(%rsi), %zmm4
	vmovups	%zmm3, 1824(%rsp)
	vmovups	448(%rsi), %zmm3
	vmovups	%zmm4, 1760(%rsp)
	vmovups	704(%rsi), %zmm4
	vmovups	%zmm3, 1696(%rsp)
	vmovups	960(%rsi), %zmm3
	vmovups	%zmm4, 1632(%rsp)
	vmovups	1216(%rsi), %zmm4
	vmovups	%zmm3, 1568(%rsp)
	vmovups	1472(%rsi), %zmm3
	vmovups	%zmm4, 1504(%rsp)
	vmovups	1728(%rsi), %zmm4
	vmovups	%zmm3, 1440(%rsp)
	vmovaps	(%rdx), %zmm3
	movabsq	$.LCPI0_2, %rdx
	vmovaps	(%rdx), %zmm9
	movabsq	$.LCPI0_3, %rdx
	vmovups	%zmm3, 1312(%rsp)
	vmovaps	(%rdx), %zmm3
	movabsq	$.LCPI0_4, %rdx
	vmovups	%zmm9, 1248(%rsp)
	vmovaps	(%rdx), %zmm9
	movabsq	$.LCPI0_5, %rdx
	vmovups	%zmm3, 1184(%rsp)
	vmovaps	(%rdx), %zmm3
	movabsq	$.LCPI0_6, %rdx
	vmovaps	(%rdx), %ymm0
	movabsq	$.LCPI0_7, %rdx
	vmovups	%zmm9, 1120(%rsp)
	vbroadcastss	(%rdx), %zmm9
	vmovups	%zmm3, 1056(%rsp)
	vbroadcastss	(%rdx), %zmm3
	movabsq	$.LCPI0_10, %rdx
	vmovss	(%rdx), %xmm2
	movabsq	$.LCPI0_11, %rdx
	vmovups	%zmm0, 992(%rsp)
	vmovss	(%rdx), %xmm1
	movabsq	$.LCPI0_12, %rdx
	vmovups	%zmm3, 800(%rsp)
	vmovss	%xmm2, 736(%rsp)
	vmovss	(%rdx), %xmm2
	movabsq	$.LCPI0_13, %rdx
	vmovss	%xmm1, 672(%rsp)
	vmovss	(%rdx), %xmm1
	vmovss	%xmm2, 608(%rsp)
	vmovss	%xmm1, 544(%rsp)
	jmp	.LBB0_2
	.p2align	4
.LBB0_12:
	movq	%r9, %rbx
	shlq	$8, %rbx
	vmovups	(%rax,%r12), %zmm0
	vmovups	64(%rax,%r12), %zmm1
	vmovups	128(%rax,%r12), %zmm2
	vmovups	192(%rax,%r12), %zmm3
	vaddps	(%r8,%rbx), %zmm0, %zmm0
	vaddps	64(%r8,%rbx), %zmm1, %zmm1
	vaddps	128(%r8,%rbx), %zmm2, %zmm2
	vaddps	192(%r8,%rbx), %zmm3, %zmm3
	vmovups	%zmm0, (%r8,%rbx)
	vmovups	%zmm1, 64(%r8,%rbx)
	vmovups	%zmm2, 128(%r8,%rbx)
	vmovups	%zmm3, 192(%r8,%rbx)
	movq	%rdx, %rbx
	subq	$10, %rbx
	cmovbq	%rdx, %rbx
	incq	(%rdi,%r9,8)
	addq	$2, %r10
	addq	$512, %r14
	addq	$512, %r13
	movq	%rbx, %rdx
	shlq	$8, %rdx
	vmovups	256(%rax,%r12), %zmm0
	vmovups	320(%rax,%r12), %zmm1
	vmovups	384(%rax,%r12), %zmm2
	vmovups	448(%rax,%r12), %zmm3
	vaddps	(%r8,%rdx), %zmm0, %zmm0
	vaddps	64(%r8,%rdx), %zmm1, %zmm1
	vaddps	128(%r8,%rdx), %zmm2, %zmm2
	vaddps	192(%r8,%rdx), %zmm3, %zmm3
	vmovups	%zmm0, (%r8,%rdx)
	vmovups	%zmm1, 64(%r8,%rdx)
	vmovups	%zmm2, 128(%r8,%rdx)
	vmovups	%zmm3, 192(%r8,%rdx)
	incq	(%rdi,%rbx,8)
	cmpq	%r11, %r10
	jge	.LBB0_13
.LBB0_2:
	movq	%r10, %r12
	shlq	$8, %r12
	vmovups	64(%rax,%r12), %zmm11
	vmovups	(%rax,%r12), %zmm0
	vmovups	128(%rax,%r12), %zmm3
	vsubps	2656(%rsp), %zmm11, %zmm2
	vsubps	3040(%rsp), %zmm0, %zmm19
	vsubps	2400(%rsp), %zmm11, %zmm1
	vsubps	2976(%rsp), %zmm0, %zmm20
	vsubps	%zmm23, %zmm11, %zmm21
	vsubps	%zmm22, %zmm0, %zmm12
	vsubps	%zmm26, %zmm0, %zmm13
	vsubps	%zmm27, %zmm0, %zmm14
	vsubps	%zmm28, %zmm0, %zmm15
	vsubps	%zmm29, %zmm0, %zmm16
	vsubps	%zmm30, %zmm0, %zmm17
	vsubps	%zmm31, %zmm0, %zmm18
	vsubps	2912(%rsp), %zmm0, %zmm0
	vmulps	%zmm21, %zmm21, %zmm21
	vfmadd231ps	%zmm12, %zmm12, %zmm21
	vsubps	2848(%rsp), %zmm11, %zmm12
	vmulps	%zmm12, %zmm12, %zmm12
	vfmadd231ps	%zmm13, %zmm13, %zmm12
	vsubps	2784(%rsp), %zmm11, %zmm13
	vmulps	%zmm13, %zmm13, %zmm13
	vfmadd231ps	%zmm14, %zmm14, %zmm13
	vsubps	2720(%rsp), %zmm11, %zmm14
	vmulps	%zmm14, %zmm14, %zmm14
	vfmadd231ps	%zmm15, %zmm15, %zmm14
	vmulps	%zmm2, %zmm2, %zmm15
	vsubps	2528(%rsp), %zmm11, %zmm2
	vfmadd231ps	%zmm16, %zmm16, %zmm15
	vsubps	2592(%rsp), %zmm11, %zmm16
	vmulps	%zmm16, %zmm16, %zmm16
	vfmadd231ps	%zmm17, %zmm17, %zmm16
	vmulps	%zmm2, %zmm2, %zmm17
	vsubps	2272(%rsp), %zmm3, %zmm2
	vfmadd231ps	%zmm18, %zmm18, %zmm17
	vsubps	2464(%rsp), %zmm11, %zmm18
	vsubps	2336(%rsp), %zmm11, %zmm11
	vfmadd213ps	%zmm12, %zmm2, %zmm2
	vsubps	2208(%rsp), %zmm3, %zmm12
	vmulps	%zmm18, %zmm18, %zmm18
	vmulps	%zmm11, %zmm11, %zmm11
	vfmadd231ps	%zmm19, %zmm19, %zmm18
	vmulps	%zmm1, %zmm1, %zmm19
	vsubps	2016(%rsp), %zmm3, %zmm1
	vfmadd231ps	%zmm0, %zmm0, %zmm11
	vsubps	%zmm24, %zmm3, %zmm0
	vfmadd231ps	%zmm20, %zmm20, %zmm19
	vsubps	1760(%rsp), %zmm3, %zmm20
	vfmadd213ps	%zmm21, %zmm0, %zmm0
	vfmadd213ps	%zmm13, %zmm12, %zmm12
	vsubps	2144(%rsp), %zmm3, %zmm13
	vfmadd213ps	%zmm16, %zmm1, %zmm1
	vsubps	1952(%rsp), %zmm3, %zmm16
	vfmadd213ps	%zmm11, %zmm20, %zmm20
	vfmadd213ps	%zmm14, %zmm13, %zmm13
	vsubps	2080(%rsp), %zmm3, %zmm14
	vfmadd213ps	%zmm17, %zmm16, %zmm16
	vsubps	1888(%rsp), %zmm3, %zmm17
	vfmadd213ps	%zmm15, %zmm14, %zmm14
	vfmadd213ps	%zmm18, %zmm17, %zmm17
	vsubps	1824(%rsp), %zmm3, %zmm18
	vfmadd213ps	%zmm19, %zmm18, %zmm18
	vmovups	192(%rax,%r12), %zmm19
	vsubps	1632(%rsp), %zmm19, %zmm3
	vsubps	%zmm25, %zmm19, %zmm11
	vfmadd213ps	%zmm12, %zmm3, %zmm3
	vsubps	1568(%rsp), %zmm19, %zmm12
	vfmadd213ps	%zmm0, %zmm11, %zmm11
	vsubps	1696(%rsp), %zmm19, %zmm0
	vfmadd213ps	%zmm13, %zmm12, %zmm12
	vsubps	1504(%rsp), %zmm19, %zmm13
	vfmadd213ps	%zmm2, %zmm0, %zmm0
	vsubps	%zmm4, %zmm19, %zmm2
	vfmadd213ps	%zmm16, %zmm2, %zmm2
	vsubps	%zmm5, %zmm19, %zmm16
	vfmadd213ps	%zmm17, %zmm16, %zmm16
	vfmadd213ps	%zmm14, %zmm13, %zmm13
	vsubps	1440(%rsp), %zmm19, %zmm14
	vfmadd213ps	%zmm1, %zmm14, %zmm14
	vsubps	%zmm6, %zmm19, %zmm1
	vfmadd213ps	%zmm18, %zmm1, %zmm1
	vsubps	%zmm7, %zmm19, %zmm18
	vinsertf64x4	$1, %ymm0, %zmm11, %zmm19
	vshuff64x2	$238, %zmm0, %zmm11, %zmm0
	vinsertf64x4	$1, %ymm12, %zmm3, %zmm11
	vshuff64x2	$238, %zmm12, %zmm3, %zmm12
	vmovupd	1312(%rsp), %zmm3
	vaddps	%zmm12, %zmm11, %zmm11
	vinsertf64x4	$1, %ymm14, %zmm13, %zmm12
	vshuff64x2	$238, %zmm14, %zmm13, %zmm13
	vshuff64x2	$238, %zmm16, %zmm2, %zmm14
	vaddps	%zmm0, %zmm19, %zmm0
	vfmadd213ps	%zmm20, %zmm18, %zmm18
	vaddps	%zmm13, %zmm12, %zmm12
	vinsertf64x4	$1, %ymm16, %zmm2, %zmm13
	vmovupd	1248(%rsp), %zmm2
	vaddps	%zmm14, %zmm13, %zmm13
	vinsertf64x4	$1, %ymm18, %zmm1, %zmm14
	vshuff64x2	$238, %zmm18, %zmm1, %zmm15
	vmovupd	1376(%rsp), %zmm1
	vaddps	%zmm15, %zmm14, %zmm14
	vshuff64x2	$136, %zmm11, %zmm0, %zmm15
	vshuff64x2	$221, %zmm11, %zmm0, %zmm0
	vshuff64x2	$136, %zmm13, %zmm12, %zmm11
	vshuff64x2	$221, %zmm13, %zmm12, %zmm12
	vaddps	%zmm12, %zmm11, %zmm11
	vaddps	%zmm0, %zmm15, %zmm0
	vshuff64x2	$232, %zmm8, %zmm14, %zmm12
	vshuff64x2	$237, %zmm8, %zmm14, %zmm13
	vaddps	%zmm13, %zmm12, %zmm12
	vmovaps	%zmm0, %zmm13
	vpermt2pd	%zmm11, %zmm3, %zmm0
	vmovupd	1184(%rsp), %zmm3
	vpermt2pd	%zmm11, %zmm1, %zmm13
	vmovaps	%zmm12, %zmm11
	vpermt2pd	%zmm8, %zmm2, %zmm11
	vmovups	1120(%rsp), %zmm2
	vaddps	%zmm0, %zmm13, %zmm0
	vpermt2pd	%zmm8, %zmm3, %zmm12
	vmovups	1056(%rsp), %zmm3
	vaddps	%zmm12, %zmm11, %zmm11
	vmovaps	%zmm0, %zmm12
	vpermt2ps	%zmm11, %zmm2, %zmm12
	vpermt2ps	%zmm11, %zmm3, %zmm0
	vmovups	992(%rsp), %zmm2
	vmovaps	%zmm9, %zmm11
	vaddps	%zmm0, %zmm12, %zmm0
	vpermt2ps	%zmm0, %zmm2, %zmm11
	vmovaps	%zmm9, %zmm0 {%k2}
	vminps	%ymm11, %ymm0, %ymm11
	vextractf128	$1, %ymm11, %xmm12
	vminps	%xmm12, %xmm11, %xmm11
	vshufpd	$3, %xmm11, %xmm11, %xmm12
	vminps	%xmm12, %xmm11, %xmm11
	vshufps	$85, %xmm11, %xmm11, %xmm12
	vminps	%xmm12, %xmm11, %xmm11
	vbroadcastss	%xmm11, %zmm12
	vmulss	608(%rsp), %xmm11, %xmm11
	vcmpeqps	%zmm12, %zmm0, %k0
	vaddss	544(%rsp), %xmm11, %xmm11
	kmovd	%k0, %edx
	orl	$65536, %edx
	tzcntl	%edx, %edx
	vpbroadcastw	%edx, %ymm12
	vpcmpeqw	928(%rsp), %ymm12, %k3
	vblendmps	%zmm9, %zmm0, %zmm12 {%k3}
	vandps	864(%rsp), %zmm0, %zmm0
	vextractf64x4	$1, %zmm12, %ymm13
	vpcmpltd	800(%rsp), %zmm0, %k0
	vminps	%ymm13, %ymm12, %ymm12
	vextractf128	$1, %ymm12, %xmm13
	vminps	%xmm13, %xmm12, %xmm12
	vshufpd	$3, %xmm12, %xmm12, %xmm13
	knotw	%k0, %k0
	vminps	%xmm13, %xmm12, %xmm12
	kmovd	%k0, %r9d
	vmovshdup	%xmm12, %xmm13
	vminss	%xmm13, %xmm12, %xmm12
	vmulss	736(%rsp), %xmm12, %xmm0
	vaddss	672(%rsp), %xmm0, %xmm0
	testl	$1023, %r9d
	jne	.LBB0_4
	vucomiss	%xmm11, %xmm0
	ja	.LBB0_7
.LBB0_4:
	movabsq	$.LCPI0_14, %rdx
	vbroadcastsd	(%rdx), %zmm30
	movabsq	$.LCPI0_15, %rdx
	vmovapd	(%rdx), %zmm29
	movq	$-256, %rdx
	vmovapd	%zmm29, %zmm12
	vmovapd	%zmm30, %zmm11
	vmovapd	%zmm29, %zmm13
	vmovapd	%zmm30, %zmm14
	vmovapd	%zmm29, %zmm15
	vmovapd	%zmm30, %zmm16
	vmovapd	%zmm29, %zmm17
	vmovapd	%zmm30, %zmm18
	vmovapd	%zmm29, %zmm19
	vmovapd	%zmm30, %zmm20
	vmovapd	%zmm29, %zmm21
	vmovapd	%zmm30, %zmm22
	vmovapd	%zmm29, %zmm23
	vmovapd	%zmm30, %zmm24
	vmovapd	%zmm29, %zmm25
	vmovapd	%zmm30, %zmm26
	vmovapd	%zmm29, %zmm27
	vmovapd	%zmm30, %zmm28
	.p2align	4
.LBB0_5:
	vmovups	224(%r14,%rdx), %ymm31
	vmovups	256(%r14,%rdx), %ymm0
	vsubps	-2080(%r15,%rdx), %ymm31, %ymm1
	vsubps	-2048(%r15,%rdx), %ymm0, %ymm2
	vsubps	-1536(%r15,%rdx), %ymm0, %ymm3
	vmulps	%ymm1, %ymm1, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm3, %ymm3, %ymm3
	vcvtps2pd	%ymm1, %zmm1
	vcvtps2pd	%ymm3, %zmm3
	vaddpd	%zmm1, %zmm27, %zmm27
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-1792(%r15,%rdx), %ymm0, %ymm2
	vaddpd	%zmm3, %zmm24, %zmm24
	vsubps	-768(%r15,%rdx), %ymm0, %ymm3
	vaddpd	%zmm1, %zmm28, %zmm28
	vsubps	-1824(%r15,%rdx), %ymm31, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm3, %ymm3, %ymm3
	vcvtps2pd	%ymm3, %zmm3
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm3, %zmm18, %zmm18
	vsubps	(%r15,%rdx), %ymm0, %ymm3
	vaddpd	%zmm1, %zmm25, %zmm25
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-1568(%r15,%rdx), %ymm31, %ymm2
	vmulps	%ymm3, %ymm3, %ymm3
	vaddpd	%zmm1, %zmm26, %zmm26
	vsubps	-1312(%r15,%rdx), %ymm31, %ymm1
	vcvtps2pd	%ymm3, %zmm3
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm2
	vaddpd	%zmm3, %zmm11, %zmm11
	vmulps	%ymm1, %ymm1, %ymm1
	vaddpd	%zmm2, %zmm23, %zmm23
	vsubps	-1280(%r15,%rdx), %ymm0, %ymm2
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm21, %zmm21
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-1024(%r15,%rdx), %ymm0, %ymm2
	vaddpd	%zmm1, %zmm22, %zmm22
	vsubps	-1056(%r15,%rdx), %ymm31, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm19, %zmm19
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-800(%r15,%rdx), %ymm31, %ymm2
	vaddpd	%zmm1, %zmm20, %zmm20
	vsubps	-544(%r15,%rdx), %ymm31, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm2
	vmulps	%ymm1, %ymm1, %ymm1
	vaddpd	%zmm2, %zmm17, %zmm17
	vsubps	-512(%r15,%rdx), %ymm0, %ymm2
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm15, %zmm15
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-256(%r15,%rdx), %ymm0, %ymm2
	vsubps	256(%r15,%rdx), %ymm0, %ymm0
	vaddpd	%zmm1, %zmm16, %zmm16
	vsubps	-288(%r15,%rdx), %ymm31, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm0, %ymm0, %ymm0
	vcvtps2pd	%ymm0, %zmm0
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm0, %zmm30, %zmm30
	vaddpd	%zmm1, %zmm13, %zmm13
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-32(%r15,%rdx), %ymm31, %ymm2
	vaddpd	%zmm1, %zmm14, %zmm14
	vsubps	224(%r15,%rdx), %ymm31, %ymm1
	addq	$64, %rdx
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm2
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm2, %zmm12, %zmm12
	vaddpd	%zmm1, %zmm29, %zmm29
	jne	.LBB0_5
	vaddpd	%zmm27, %zmm28, %zmm0
	vaddpd	%zmm25, %zmm26, %zmm2
	vaddpd	%zmm23, %zmm24, %zmm24
	vaddpd	%zmm21, %zmm22, %zmm3
	vaddpd	%zmm12, %zmm11, %zmm11
	vaddpd	%zmm13, %zmm14, %zmm13
	vaddpd	%zmm19, %zmm20, %zmm21
	vaddpd	%zmm15, %zmm16, %zmm15
	vmovups	480(%rsp), %zmm22
	vmovups	288(%rsp), %zmm25
	vmovups	224(%rsp), %zmm26
	vmovups	96(%rsp), %zmm28
	vmovups	-96(%rsp), %zmm31
	vextractf64x4	$1, %zmm0, %ymm1
	vextractf64x4	$1, %zmm11, %ymm12
	vextractf64x4	$1, %zmm13, %ymm14
	vextractf64x4	$1, %zmm15, %ymm16
	vaddpd	%zmm1, %zmm0, %zmm0
	vaddpd	%zmm12, %zmm11, %zmm11
	vaddpd	%zmm14, %zmm13, %zmm13
	vaddpd	%zmm16, %zmm15, %zmm15
	vextractf128	$1, %ymm0, %xmm1
	vextractf128	$1, %ymm11, %xmm12
	vextractf128	$1, %ymm13, %xmm14
	vextractf32x4	$1, %ymm15, %xmm16
	vaddpd	%xmm1, %xmm0, %xmm0
	vaddpd	%xmm12, %xmm11, %xmm11
	vaddpd	%xmm14, %xmm13, %xmm13
	vaddpd	%xmm16, %xmm15, %xmm15
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vshufpd	$1, %xmm11, %xmm11, %xmm12
	vshufpd	$1, %xmm13, %xmm13, %xmm14
	vshufpd	$1, %xmm15, %xmm15, %xmm16
	vaddsd	%xmm1, %xmm0, %xmm27
	vextractf64x4	$1, %zmm2, %ymm1
	vaddsd	%xmm12, %xmm11, %xmm12
	vaddpd	%zmm29, %zmm30, %zmm11
	vaddsd	%xmm14, %xmm13, %xmm13
	vaddsd	%xmm16, %xmm15, %xmm15
	vmovups	32(%rsp), %zmm29
	vmovups	-32(%rsp), %zmm30
	vaddpd	%zmm1, %zmm2, %zmm0
	vextractf64x4	$1, %zmm24, %ymm2
	vextractf64x4	$1, %zmm11, %ymm14
	vextractf128	$1, %ymm0, %xmm1
	vaddpd	%zmm14, %zmm11, %zmm11
	vaddpd	%xmm1, %xmm0, %xmm0
	vextractf128	$1, %ymm11, %xmm14
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vaddpd	%xmm14, %xmm11, %xmm11
	vaddsd	%xmm1, %xmm0, %xmm0
	vaddpd	%zmm2, %zmm24, %zmm1
	vmovups	352(%rsp), %zmm24
	vshufpd	$1, %xmm11, %xmm11, %xmm14
	vextractf128	$1, %ymm1, %xmm2
	vaddsd	%xmm14, %xmm11, %xmm20
	vcvtsd2ss	%xmm27, %xmm27, %xmm11
	vmovups	160(%rsp), %zmm27
	vaddpd	%xmm2, %xmm1, %xmm1
	vucomiss	%xmm11, %xmm11
	vshufpd	$1, %xmm1, %xmm1, %xmm2
	vaddsd	%xmm2, %xmm1, %xmm23
	vextractf64x4	$1, %zmm3, %ymm2
	setnp	%bpl
	vaddpd	%zmm2, %zmm3, %zmm1
	vextractf64x4	$1, %zmm21, %ymm3
	vcvtsd2ss	%xmm23, %xmm23, %xmm19
	vmovups	416(%rsp), %zmm23
	vextractf128	$1, %ymm1, %xmm2
	vaddpd	%xmm2, %xmm1, %xmm1
	vshufpd	$1, %xmm1, %xmm1, %xmm2
	vaddsd	%xmm2, %xmm1, %xmm1
	vaddpd	%zmm3, %zmm21, %zmm2
	vaddpd	%zmm17, %zmm18, %zmm21
	vcvtsd2ss	%xmm0, %xmm0, %xmm18
	vextractf128	$1, %ymm2, %xmm3
	vextractf64x4	$1, %zmm21, %ymm17
	vcmpltss	%xmm11, %xmm18, %k0
	vcmpunordss	%xmm10, %xmm18, %k3
	vcvtsd2ss	%xmm1, %xmm1, %xmm1
	vaddpd	%xmm3, %xmm2, %xmm2
	korw	%k3, %k0, %k0
	kmovd	%k0, %edx
	andb	%dl, %bpl
	vshufpd	$1, %xmm2, %xmm2, %xmm3
	kmovd	%ebp, %k3
	movzbl	%bpl, %r9d
	vaddsd	%xmm3, %xmm2, %xmm2
	vaddpd	%zmm17, %zmm21, %zmm3
	vextractf32x4	$1, %ymm3, %xmm17
	vcvtsd2ss	%xmm2, %xmm2, %xmm16
	vaddpd	%xmm17, %xmm3, %xmm3
	vshufpd	$1, %xmm3, %xmm3, %xmm17
	vaddsd	%xmm17, %xmm3, %xmm3
	vcvtsd2ss	%xmm3, %xmm3, %xmm0
	vmovss	%xmm18, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm19, %k3
	vcvtsd2ss	%xmm15, %xmm15, %xmm15
	vcvtsd2ss	%xmm13, %xmm13, %xmm14
	vcvtsd2ss	%xmm12, %xmm12, %xmm13
	vcvtsd2ss	%xmm20, %xmm20, %xmm12
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm19, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$2, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm19, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm1, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm1, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$3, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm1, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm16, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm16, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$4, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm16, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm0, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm0, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$5, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm0, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm15, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm15, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$6, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm15, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm14, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm14, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$7, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm14, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm13, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm13, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bpl
	andb	%dl, %bpl
	movl	$8, %edx
	kmovd	%ebp, %k3
	cmovneq	%rdx, %r9
	vmovss	%xmm13, %xmm11, %xmm11 {%k3}
	movq	%r9, %rdx
	vucomiss	%xmm12, %xmm11
	cmovaq	%rcx, %rdx
	vucomiss	%xmm12, %xmm12
	cmovpq	%rcx, %rdx
	vucomiss	%xmm11, %xmm11
	cmovpq	%r9, %rdx
.LBB0_7:
	vmovups	320(%rax,%r12), %zmm1
	vmovups	256(%rax,%r12), %zmm0
	movq	%rdx, %r9
	subq	$10, %r9
	vsubps	2784(%rsp), %zmm1, %zmm19
	vsubps	2656(%rsp), %zmm1, %zmm20
	vsubps	3040(%rsp), %zmm0, %zmm16
	vsubps	2976(%rsp), %zmm0, %zmm17
	cmovbq	%rdx, %r9
	vsubps	%zmm23, %zmm1, %zmm18
	vsubps	%zmm22, %zmm0, %zmm2
	vsubps	%zmm26, %zmm0, %zmm3
	vsubps	%zmm27, %zmm0, %zmm11
	vsubps	%zmm28, %zmm0, %zmm12
	vsubps	%zmm29, %zmm0, %zmm13
	vsubps	%zmm30, %zmm0, %zmm14
	vsubps	%zmm31, %zmm0, %zmm15
	vsubps	2912(%rsp), %zmm0, %zmm0
	vmulps	%zmm18, %zmm18, %zmm18
	vfmadd231ps	%zmm2, %zmm2, %zmm18
	vsubps	2848(%rsp), %zmm1, %zmm2
	vmulps	%zmm2, %zmm2, %zmm2
	vfmadd231ps	%zmm3, %zmm3, %zmm2
	vmulps	%zmm19, %zmm19, %zmm3
	vsubps	2400(%rsp), %zmm1, %zmm19
	vfmadd231ps	%zmm11, %zmm11, %zmm3
	vsubps	2720(%rsp), %zmm1, %zmm11
	vmulps	%zmm11, %zmm11, %zmm11
	vfmadd231ps	%zmm12, %zmm12, %zmm11
	vmulps	%zmm20, %zmm20, %zmm12
	vsubps	2528(%rsp), %zmm1, %zmm20
	vfmadd231ps	%zmm13, %zmm13, %zmm12
	vsubps	2592(%rsp), %zmm1, %zmm13
	vmulps	%zmm13, %zmm13, %zmm13
	vfmadd231ps	%zmm14, %zmm14, %zmm13
	vmulps	%zmm20, %zmm20, %zmm14
	vfmadd231ps	%zmm15, %zmm15, %zmm14
	vsubps	2464(%rsp), %zmm1, %zmm15
	vsubps	2336(%rsp), %zmm1, %zmm1
	vmulps	%zmm15, %zmm15, %zmm15
	vmulps	%zmm1, %zmm1, %zmm1
	vfmadd231ps	%zmm16, %zmm16, %zmm15
	vmulps	%zmm19, %zmm19, %zmm16
	vfmadd231ps	%zmm0, %zmm0, %zmm1
	vfmadd231ps	%zmm17, %zmm17, %zmm16
	vmovups	384(%rax,%r12), %zmm17
	vsubps	2016(%rsp), %zmm17, %zmm19
	vsubps	2272(%rsp), %zmm17, %zmm21
	vsubps	2144(%rsp), %zmm17, %zmm20
	vsubps	%zmm24, %zmm17, %zmm0
	vfmadd213ps	%zmm13, %zmm19, %zmm19
	vsubps	1952(%rsp), %zmm17, %zmm13
	vfmadd213ps	%zmm2, %zmm21, %zmm21
	vsubps	2208(%rsp), %zmm17, %zmm2
	vfmadd213ps	%zmm11, %zmm20, %zmm20
	vsubps	2080(%rsp), %zmm17, %zmm11
	vfmadd213ps	%zmm18, %zmm0, %zmm0
	vfmadd213ps	%zmm14, %zmm13, %zmm13
	vsubps	1888(%rsp), %zmm17, %zmm14
	vfmadd213ps	%zmm3, %zmm2, %zmm2
	vfmadd213ps	%zmm12, %zmm11, %zmm11
	vfmadd213ps	%zmm15, %zmm14, %zmm14
	vsubps	1824(%rsp), %zmm17, %zmm15
	vsubps	1760(%rsp), %zmm17, %zmm17
	vfmadd213ps	%zmm16, %zmm15, %zmm15
	vmovups	448(%rax,%r12), %zmm16
	vfmadd213ps	%zmm1, %zmm17, %zmm17
	vsubps	1632(%rsp), %zmm16, %zmm18
	vsubps	%zmm25, %zmm16, %zmm1
	vfmadd213ps	%zmm0, %zmm1, %zmm1
	vsubps	1696(%rsp), %zmm16, %zmm0
	vfmadd213ps	%zmm2, %zmm18, %zmm18
	vsubps	1568(%rsp), %zmm16, %zmm2
	vfmadd213ps	%zmm21, %zmm0, %zmm0
	vsubps	1504(%rsp), %zmm16, %zmm21
	vfmadd213ps	%zmm20, %zmm2, %zmm2
	vsubps	%zmm4, %zmm16, %zmm20
	vfmadd213ps	%zmm13, %zmm20, %zmm20
	vsubps	%zmm5, %zmm16, %zmm13
	vfmadd213ps	%zmm14, %zmm13, %zmm13
	vfmadd213ps	%zmm11, %zmm21, %zmm21
	vsubps	1440(%rsp), %zmm16, %zmm11
	vfmadd213ps	%zmm19, %zmm11, %zmm11
	vsubps	%zmm6, %zmm16, %zmm19
	vfmadd213ps	%zmm15, %zmm19, %zmm19
	vsubps	%zmm7, %zmm16, %zmm15
	vinsertf64x4	$1, %ymm0, %zmm1, %zmm16
	vshuff64x2	$238, %zmm0, %zmm1, %zmm0
	vinsertf64x4	$1, %ymm2, %zmm18, %zmm1
	vshuff64x2	$238, %zmm2, %zmm18, %zmm2
	vshuff64x2	$238, %zmm11, %zmm21, %zmm3
	vaddps	%zmm2, %zmm1, %zmm1
	vinsertf64x4	$1, %ymm11, %zmm21, %zmm2
	vshuff64x2	$238, %zmm13, %zmm20, %zmm11
	vaddps	%zmm0, %zmm16, %zmm0
	vfmadd213ps	%zmm17, %zmm15, %zmm15
	vaddps	%zmm3, %zmm2, %zmm2
	vinsertf64x4	$1, %ymm13, %zmm20, %zmm3
	vmovupd	1184(%rsp), %zmm13
	vaddps	%zmm11, %zmm3, %zmm3
	vinsertf64x4	$1, %ymm15, %zmm19, %zmm11
	vshuff64x2	$238, %zmm15, %zmm19, %zmm12
	vaddps	%zmm12, %zmm11, %zmm11
	vshuff64x2	$136, %zmm1, %zmm0, %zmm12
	vshuff64x2	$221, %zmm1, %zmm0, %zmm0
	vshuff64x2	$136, %zmm3, %zmm2, %zmm1
	vshuff64x2	$221, %zmm3, %zmm2, %zmm2
	vaddps	%zmm0, %zmm12, %zmm0
	vmovupd	1376(%rsp), %zmm12
	vaddps	%zmm2, %zmm1, %zmm1
	vshuff64x2	$232, %zmm8, %zmm11, %zmm2
	vshuff64x2	$237, %zmm8, %zmm11, %zmm3
	vmovupd	1312(%rsp), %zmm11
	vaddps	%zmm3, %zmm2, %zmm2
	vmovaps	%zmm0, %zmm3
	vpermt2pd	%zmm1, %zmm12, %zmm3
	vmovupd	1248(%rsp), %zmm12
	vpermt2pd	%zmm1, %zmm11, %zmm0
	vmovaps	%zmm2, %zmm1
	vpermt2pd	%zmm8, %zmm13, %zmm2
	vaddps	%zmm0, %zmm3, %zmm0
	vmovups	1056(%rsp), %zmm3
	vpermt2pd	%zmm8, %zmm12, %zmm1
	vmovups	1120(%rsp), %zmm12
	vaddps	%zmm2, %zmm1, %zmm1
	vmovaps	%zmm0, %zmm2
	vpermt2ps	%zmm1, %zmm12, %zmm2
	vpermt2ps	%zmm1, %zmm3, %zmm0
	vmovaps	%zmm9, %zmm1
	vaddps	%zmm0, %zmm2, %zmm0
	vmovups	992(%rsp), %zmm2
	vpermt2ps	%zmm0, %zmm2, %zmm1
	vmovaps	%zmm9, %zmm0 {%k1}
	vminps	%ymm1, %ymm0, %ymm1
	vextractf128	$1, %ymm1, %xmm2
	vminps	%xmm2, %xmm1, %xmm1
	vshufpd	$3, %xmm1, %xmm1, %xmm2
	vminps	%xmm2, %xmm1, %xmm1
	vshufps	$85, %xmm1, %xmm1, %xmm2
	vminps	%xmm2, %xmm1, %xmm1
	vbroadcastss	%xmm1, %zmm2
	vmulss	608(%rsp), %xmm1, %xmm1
	vcmpeqps	%zmm2, %zmm0, %k0
	vaddss	544(%rsp), %xmm1, %xmm11
	kmovd	%k0, %edx
	orl	$65536, %edx
	tzcntl	%edx, %edx
	vpbroadcastw	%edx, %ymm2
	vpcmpeqw	928(%rsp), %ymm2, %k3
	vblendmps	%zmm9, %zmm0, %zmm2 {%k3}
	vandps	864(%rsp), %zmm0, %zmm0
	vextractf64x4	$1, %zmm2, %ymm3
	vpcmpltd	800(%rsp), %zmm0, %k0
	vminps	%ymm3, %ymm2, %ymm2
	vextractf128	$1, %ymm2, %xmm3
	vminps	%xmm3, %xmm2, %xmm2
	vshufpd	$3, %xmm2, %xmm2, %xmm3
	knotw	%k0, %k0
	vminps	%xmm3, %xmm2, %xmm2
	kmovd	%k0, %ebp
	vmovshdup	%xmm2, %xmm3
	vminss	%xmm3, %xmm2, %xmm2
	vmulss	736(%rsp), %xmm2, %xmm0
	vaddss	672(%rsp), %xmm0, %xmm0
	testl	$1023, %ebp
	jne	.LBB0_9
	vucomiss	%xmm11, %xmm0
	ja	.LBB0_12
.LBB0_9:
	movabsq	$.LCPI0_14, %rdx
	vbroadcastsd	(%rdx), %zmm11
	movabsq	$.LCPI0_15, %rdx
	vmovapd	(%rdx), %zmm12
	movq	$-256, %rdx
	vmovapd	%zmm12, %zmm13
	vmovapd	%zmm11, %zmm14
	vmovapd	%zmm12, %zmm15
	vmovapd	%zmm11, %zmm16
	vmovapd	%zmm12, %zmm17
	vmovapd	%zmm11, %zmm18
	vmovapd	%zmm12, %zmm19
	vmovapd	%zmm11, %zmm20
	vmovapd	%zmm12, %zmm21
	vmovapd	%zmm11, %zmm22
	vmovapd	%zmm12, %zmm23
	vmovapd	%zmm11, %zmm24
	vmovapd	%zmm12, %zmm25
	vmovapd	%zmm11, %zmm26
	vmovapd	%zmm12, %zmm27
	vmovapd	%zmm11, %zmm28
	vmovapd	%zmm12, %zmm29
	vmovapd	%zmm11, %zmm30
	.p2align	4
.LBB0_10:
	vmovups	224(%r13,%rdx), %ymm0
	vmovups	256(%r13,%rdx), %ymm31
	vsubps	-2080(%r15,%rdx), %ymm0, %ymm1
	vsubps	-2048(%r15,%rdx), %ymm31, %ymm2
	vsubps	-1536(%r15,%rdx), %ymm31, %ymm3
	vmulps	%ymm1, %ymm1, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm3, %ymm3, %ymm3
	vcvtps2pd	%ymm1, %zmm1
	vcvtps2pd	%ymm3, %zmm3
	vaddpd	%zmm1, %zmm29, %zmm29
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-1792(%r15,%rdx), %ymm31, %ymm2
	vaddpd	%zmm3, %zmm26, %zmm26
	vsubps	-768(%r15,%rdx), %ymm31, %ymm3
	vaddpd	%zmm1, %zmm30, %zmm30
	vsubps	-1824(%r15,%rdx), %ymm0, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm3, %ymm3, %ymm3
	vcvtps2pd	%ymm3, %zmm3
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm3, %zmm20, %zmm20
	vsubps	(%r15,%rdx), %ymm31, %ymm3
	vaddpd	%zmm1, %zmm27, %zmm27
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-1568(%r15,%rdx), %ymm0, %ymm2
	vmulps	%ymm3, %ymm3, %ymm3
	vaddpd	%zmm1, %zmm28, %zmm28
	vsubps	-1312(%r15,%rdx), %ymm0, %ymm1
	vcvtps2pd	%ymm3, %zmm3
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm2
	vaddpd	%zmm3, %zmm14, %zmm14
	vmulps	%ymm1, %ymm1, %ymm1
	vaddpd	%zmm2, %zmm25, %zmm25
	vsubps	-1280(%r15,%rdx), %ymm31, %ymm2
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm23, %zmm23
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-1024(%r15,%rdx), %ymm31, %ymm2
	vaddpd	%zmm1, %zmm24, %zmm24
	vsubps	-1056(%r15,%rdx), %ymm0, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm21, %zmm21
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-800(%r15,%rdx), %ymm0, %ymm2
	vaddpd	%zmm1, %zmm22, %zmm22
	vsubps	-544(%r15,%rdx), %ymm0, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm2
	vmulps	%ymm1, %ymm1, %ymm1
	vaddpd	%zmm2, %zmm19, %zmm19
	vsubps	-512(%r15,%rdx), %ymm31, %ymm2
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm17, %zmm17
	vmulps	%ymm2, %ymm2, %ymm2
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-256(%r15,%rdx), %ymm31, %ymm2
	vaddpd	%zmm1, %zmm18, %zmm18
	vsubps	-288(%r15,%rdx), %ymm0, %ymm1
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm1, %zmm15, %zmm15
	vcvtps2pd	%ymm2, %zmm1
	vsubps	-32(%r15,%rdx), %ymm0, %ymm2
	vsubps	224(%r15,%rdx), %ymm0, %ymm0
	vaddpd	%zmm1, %zmm16, %zmm16
	vsubps	256(%r15,%rdx), %ymm31, %ymm1
	addq	$64, %rdx
	vmulps	%ymm2, %ymm2, %ymm2
	vmulps	%ymm0, %ymm0, %ymm0
	vcvtps2pd	%ymm2, %zmm2
	vcvtps2pd	%ymm0, %zmm0
	vmulps	%ymm1, %ymm1, %ymm1
	vcvtps2pd	%ymm1, %zmm1
	vaddpd	%zmm2, %zmm13, %zmm13
	vaddpd	%zmm0, %zmm12, %zmm12
	vaddpd	%zmm1, %zmm11, %zmm11
	jne	.LBB0_10
	vaddpd	%zmm29, %zmm30, %zmm0
	vaddpd	%zmm27, %zmm28, %zmm2
	vaddpd	%zmm25, %zmm26, %zmm26
	vaddpd	%zmm23, %zmm24, %zmm3
	vaddpd	%zmm21, %zmm22, %zmm21
	vaddpd	%zmm12, %zmm11, %zmm11
	vaddpd	%zmm17, %zmm18, %zmm17
	vaddpd	%zmm15, %zmm16, %zmm15
	vaddpd	%zmm13, %zmm14, %zmm13
	vmovups	480(%rsp), %zmm22
	vmovups	416(%rsp), %zmm23
	vmovups	352(%rsp), %zmm24
	vmovups	160(%rsp), %zmm27
	vmovups	96(%rsp), %zmm28
	vmovups	-32(%rsp), %zmm30
	vmovups	-96(%rsp), %zmm31
	vextractf64x4	$1, %zmm0, %ymm1
	vextractf64x4	$1, %zmm11, %ymm12
	vextractf64x4	$1, %zmm17, %ymm18
	vextractf64x4	$1, %zmm15, %ymm16
	vextractf64x4	$1, %zmm13, %ymm14
	vaddpd	%zmm1, %zmm0, %zmm0
	vaddpd	%zmm12, %zmm11, %zmm11
	vaddpd	%zmm18, %zmm17, %zmm17
	vaddpd	%zmm16, %zmm15, %zmm15
	vaddpd	%zmm14, %zmm13, %zmm13
	vextractf128	$1, %ymm0, %xmm1
	vextractf128	$1, %ymm11, %xmm12
	vextractf32x4	$1, %ymm17, %xmm18
	vextractf32x4	$1, %ymm15, %xmm16
	vextractf128	$1, %ymm13, %xmm14
	vaddpd	%xmm1, %xmm0, %xmm0
	vaddpd	%xmm12, %xmm11, %xmm11
	vaddpd	%xmm18, %xmm17, %xmm17
	vaddpd	%xmm16, %xmm15, %xmm15
	vaddpd	%xmm14, %xmm13, %xmm13
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vshufpd	$1, %xmm11, %xmm11, %xmm12
	vshufpd	$1, %xmm17, %xmm17, %xmm18
	vshufpd	$1, %xmm15, %xmm15, %xmm16
	vshufpd	$1, %xmm13, %xmm13, %xmm14
	vaddsd	%xmm1, %xmm0, %xmm29
	vextractf64x4	$1, %zmm2, %ymm1
	vaddsd	%xmm12, %xmm11, %xmm12
	vaddsd	%xmm18, %xmm17, %xmm17
	vaddsd	%xmm16, %xmm15, %xmm18
	vaddsd	%xmm14, %xmm13, %xmm13
	vaddpd	%zmm1, %zmm2, %zmm0
	vextractf64x4	$1, %zmm26, %ymm2
	vextractf128	$1, %ymm0, %xmm1
	vaddpd	%xmm1, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vaddsd	%xmm1, %xmm0, %xmm0
	vaddpd	%zmm2, %zmm26, %zmm1
	vmovups	224(%rsp), %zmm26
	vextractf128	$1, %ymm1, %xmm2
	vcvtsd2ss	%xmm29, %xmm29, %xmm11
	vmovups	32(%rsp), %zmm29
	vaddpd	%xmm2, %xmm1, %xmm1
	vucomiss	%xmm11, %xmm11
	vshufpd	$1, %xmm1, %xmm1, %xmm2
	vaddsd	%xmm2, %xmm1, %xmm25
	vextractf64x4	$1, %zmm3, %ymm2
	setnp	%bl
	vaddpd	%zmm2, %zmm3, %zmm1
	vextractf64x4	$1, %zmm21, %ymm3
	vextractf128	$1, %ymm1, %xmm2
	vaddpd	%xmm2, %xmm1, %xmm1
	vshufpd	$1, %xmm1, %xmm1, %xmm2
	vaddsd	%xmm2, %xmm1, %xmm1
	vaddpd	%zmm3, %zmm21, %zmm2
	vaddpd	%zmm19, %zmm20, %zmm21
	vcvtsd2ss	%xmm25, %xmm25, %xmm20
	vmovups	288(%rsp), %zmm25
	vextractf128	$1, %ymm2, %xmm3
	vextractf64x4	$1, %zmm21, %ymm19
	vcvtsd2ss	%xmm1, %xmm1, %xmm1
	vaddpd	%xmm3, %xmm2, %xmm2
	vshufpd	$1, %xmm2, %xmm2, %xmm3
	vaddsd	%xmm3, %xmm2, %xmm2
	vaddpd	%zmm19, %zmm21, %zmm3
	vextractf32x4	$1, %ymm3, %xmm19
	vcvtsd2ss	%xmm2, %xmm2, %xmm16
	vaddpd	%xmm19, %xmm3, %xmm3
	vshufpd	$1, %xmm3, %xmm3, %xmm19
	vaddsd	%xmm19, %xmm3, %xmm3
	vcvtsd2ss	%xmm0, %xmm0, %xmm19
	vcmpltss	%xmm11, %xmm19, %k0
	vcmpunordss	%xmm10, %xmm19, %k3
	vcvtsd2ss	%xmm3, %xmm3, %xmm0
	korw	%k3, %k0, %k0
	kmovd	%k0, %edx
	vcvtsd2ss	%xmm17, %xmm17, %xmm15
	vcvtsd2ss	%xmm18, %xmm18, %xmm14
	vcvtsd2ss	%xmm13, %xmm13, %xmm13
	vcvtsd2ss	%xmm12, %xmm12, %xmm12
	andb	%dl, %bl
	kmovd	%ebx, %k3
	movzbl	%bl, %ebp
	vmovss	%xmm19, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm20, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm20, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$2, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm20, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm1, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm1, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$3, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm1, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm16, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm16, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$4, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm16, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm0, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm0, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$5, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm0, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm15, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm15, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$6, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm15, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm14, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm14, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$7, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm14, %xmm11, %xmm11 {%k3}
	vcmpunordss	%xmm10, %xmm13, %k3
	vucomiss	%xmm11, %xmm11
	vcmpltss	%xmm11, %xmm13, %k0
	korw	%k0, %k3, %k0
	kmovd	%k0, %edx
	setnp	%bl
	andb	%dl, %bl
	movl	$8, %edx
	kmovd	%ebx, %k3
	cmovneq	%rdx, %rbp
	vmovss	%xmm13, %xmm11, %xmm11 {%k3}
	movq	%rbp, %rdx
	vucomiss	%xmm12, %xmm11
	cmovaq	%rcx, %rdx
	vucomiss	%xmm12, %xmm12
	cmovpq	%rcx, %rdx
	vucomiss	%xmm11, %xmm11
	cmovpq	%rbp, %rdx
	jmp	.LBB0_12
.LBB0_13:
	cmpq	-112(%rsp), %r11
	jge	.LBB0_21
	vmovups	2304(%rsi), %zmm4
	movq	-104(%rsp), %rdx
	movq	-120(%rsp), %rcx
	vmovups	2048(%rsi), %zmm0
	vmovups	320(%rsi), %zmm5
	movw	$-1024, %r9w
	vmovups	(%rsi), %zmm14
	vmovups	64(%rsi), %zmm15
	vmovups	128(%rsi), %zmm16
	vmovups	192(%rsi), %zmm17
	vmovups	256(%rsi), %zmm18
	vmovups	512(%rsi), %zmm26
	vmovups	768(%rsi), %zmm27
	vmovups	1024(%rsi), %zmm28
	vmovups	1280(%rsi), %zmm29
	vmovups	1536(%rsi), %zmm30
	vmovups	1792(%rsi), %zmm31
	movl	$5, %r14d
	movl	$6, %r15d
	movl	$7, %r12d
	movl	$8, %r13d
	movl	$9, %ebp
	vxorps	%xmm23, %xmm23, %xmm23
	vxorps	%xmm25, %xmm25, %xmm25
	kmovd	%r9d, %k1
	movabsq	$.LCPI0_8, %r9
	vmovaps	(%r9), %ymm6
	movabsq	$.LCPI0_9, %r9
	shrq	%rdx
	shlq	$8, %rcx
	shlq	$9, %rdx
	addq	%rdx, %rcx
	movabsq	$.LCPI0_0, %rdx
	vmovups	%zmm4, 2976(%rsp)
	vmovups	576(%rsi), %zmm4
	vmovapd	(%rdx), %zmm19
	movabsq	$.LCPI0_1, %rdx
	vmovups	%zmm0, 3040(%rsp)
	vmovups	%zmm5, 2912(%rsp)
	vmovups	832(%rsi), %zmm5
	vmovups	%zmm14, 544(%rsp)
	vmovups	%zmm15, 480(%rsp)
	vmovups	%zmm16, 416(%rsp)
	vmovups	%zmm17, 352(%rsp)
	vmovups	%zmm18, 288(%rsp)
	vmovups	%zmm26, 224(%rsp)
	vmovups	%zmm27, 160(%rsp)
	vmovups	%zmm28, 96(%rsp)
	vmovups	%zmm29, 32(%rsp)
	vmovups	%zmm30, -32(%rsp)
	vmovups	%zmm31, -96(%rsp)
	vmovapd	(%rdx), %zmm20
	movabsq	$.LCPI0_2, %rdx
	vmovapd	(%rdx), %zmm21
	movabsq	$.LCPI0_3, %rdx
	vmovups	%ymm6, 2592(%rsp)
	vmovapd	(%rdx), %zmm22
	movabsq	$.LCPI0_4, %rdx
	vmovaps	(%rdx), %zmm12
	movabsq	$.LCPI0_5, %rdx
	vmovaps	(%rdx), %zmm13
	leaq	32(%rax,%rcx), %rdx
	movabsq	$.LCPI0_6, %rcx
	vmovaps	(%rcx), %ymm0
	movabsq	$.LCPI0_7, %rcx
	vbroadcastss	(%rcx), %zmm24
	vmovups	%zmm4, 2848(%rsp)
	vmovups	1088(%rsi), %zmm4
	vmovups	%zmm5, 2784(%rsp)
	vbroadcastss	(%r9), %zmm5
	vmovups	%zmm12, 672(%rsp)
	vmovups	%zmm13, 608(%rsp)
	vmovups	%zmm0, 2656(%rsp)
	vmovups	%zmm4, 2720(%rsp)
	vbroadcastss	(%rcx), %zmm4
	movabsq	$.LCPI0_10, %rcx
	vmovups	%zmm5, 2528(%rsp)
	vmovss	(%rcx), %xmm1
	movabsq	$.LCPI0_11, %rcx
	vmovss	(%rcx), %xmm2
	movabsq	$.LCPI0_12, %rcx
	vmovups	%zmm4, 2464(%rsp)
	vmovss	%xmm1, 2400(%rsp)
	vmovss	(%rcx), %xmm1
	movabsq	$.LCPI0_13, %rcx
	vmovss	%xmm2, 2336(%rsp)
	vmovups	1600(%rsi), %zmm2
	vmovss	(%rcx), %xmm3
	vmovss	%xmm1, 2272(%rsp)
	vmovups	1344(%rsi), %zmm1
	vmovups	%zmm2, 2080(%rsp)
	vmovups	2112(%rsi), %zmm2
	vmovss	%xmm3, 2208(%rsp)
	vmovups	%zmm1, 2144(%rsp)
	vmovups	1856(%rsi), %zmm1
	vmovups	%zmm2, 1952(%rsp)
	vmovups	384(%rsi), %zmm2
	vmovups	%zmm1, 2016(%rsp)
	vmovups	2368(%rsi), %zmm1
	vmovups	%zmm2, 1824(%rsp)
	vmovups	896(%rsi), %zmm2
	vmovups	%zmm1, 1888(%rsp)
	vmovups	640(%rsi), %zmm1
	vmovups	%zmm2, 1696(%rsp)
	vmovups	1408(%rsi), %zmm2
	vmovups	%zmm1, 1760(%rsp)
	vmovups	1152(%rsi), %zmm1
	vmovups	%zmm2, 1568(%rsp)
	vmovups	1920(%rsi), %zmm2
	vmovups	%zmm1, 1632(%rsp)
	vmovups	1664(%rsi), %zmm1
	vmovups	%zmm2, 1440(%rsp)
	vmovups	2432(%rsi), %zmm2
	vmovups	%zmm1, 1504(%rsp)
	vmovups	2176(%rsi), %zmm1
	vmovups	%zmm2, 1312(%rsp)
	vmovups	704(%rsi), %zmm2
	vmovups	%zmm1, 1376(%rsp)
	vmovups	448(%rsi), %zmm1
	vmovups	%zmm2, 1184(%rsp)
	vmovups	1216(%rsi), %zmm2
	vmovups	%zmm1, 1248(%rsp)
	vmovups	960(%rsi), %zmm1
	vmovups	%zmm2, 1056(%rsp)
	vmovups	1728(%rsi), %zmm2
	vmovups	%zmm1, 1120(%rsp)
	vmovups	1472(%rsi), %zmm1
	vmovups	%zmm2, 928(%rsp)
	vmovups	2240(%rsi), %zmm2
	vmovups	%zmm1, 992(%rsp)
	vmovups	1984(%rsi), %zmm1
	vmovups	%zmm2, 800(%rsp)
	vmovups	%zmm1, 864(%rsp)
	vmovups	2496(%rsi), %zmm1
	vmovups	%zmm1, 736(%rsp)
	jmp	.LBB0_15
	.p2align	4
.LBB0_20:
	movq	%r10, %rcx
	subq	$10, %rcx
	vmovups	(%rax,%r9), %zmm0
	vmovups	64(%rax,%r9), %zmm1
	vmovups	128(%rax,%r9), %zmm2
	vmovups	192(%rax,%r9), %zmm3
	cmovbq	%r10, %rcx
	incq	%r11
	addq	$256, %rdx
	movq	%rcx, %r10
	shlq	$8, %r10
	vaddps	(%r8,%r10), %zmm0, %zmm0
	vaddps	64(%r8,%r10), %zmm1, %zmm1
	vaddps	128(%r8,%r10), %zmm2, %zmm2
	vaddps	192(%r8,%r10), %zmm3, %zmm3
	vmovups	%zmm0, (%r8,%r10)
	vmovups	%zmm1, 64(%r8,%r10)
	vmovups	%zmm2, 128(%r8,%r10)
	vmovups	%zmm3, 192(%r8,%r10)
	incq	(%rdi,%rcx,8)
	cmpq	-112(%rsp), %r11
	jge	.LBB0_21
.LBB0_15:
	movq	%r11, %r9
	shlq	$8, %r9
	vmovups	64(%rax,%r9), %zmm1
	vmovups	(%rax,%r9), %zmm0
	vsubps	3040(%rsp), %zmm0, %zmm10
	vsubps	%zmm15, %zmm1, %zmm11
	vsubps	%zmm14, %zmm0, %zmm2
	vsubps	%zmm18, %zmm0, %zmm3
	vsubps	%zmm26, %zmm0, %zmm4
	vsubps	%zmm27, %zmm0, %zmm5
	vsubps	%zmm28, %zmm0, %zmm6
	vsubps	%zmm29, %zmm0, %zmm7
	vsubps	%zmm30, %zmm0, %zmm8
	vsubps	%zmm31, %zmm0, %zmm9
	vsubps	2976(%rsp), %zmm0, %zmm0
	vmulps	%zmm11, %zmm11, %zmm11
	vfmadd231ps	%zmm2, %zmm2, %zmm11
	vsubps	2912(%rsp), %zmm1, %zmm2
	vmulps	%zmm2, %zmm2, %zmm2
	vfmadd231ps	%zmm3, %zmm3, %zmm2
	vsubps	2848(%rsp), %zmm1, %zmm3
	vmulps	%zmm3, %zmm3, %zmm3
	vfmadd231ps	%zmm4, %zmm4, %zmm3
	vsubps	2784(%rsp), %zmm1, %zmm4
	vmulps	%zmm4, %zmm4, %zmm4
	vfmadd231ps	%zmm5, %zmm5, %zmm4
	vsubps	2720(%rsp), %zmm1, %zmm5
	vmulps	%zmm5, %zmm5, %zmm5
	vfmadd231ps	%zmm6, %zmm6, %zmm5
	vsubps	2144(%rsp), %zmm1, %zmm6
	vmulps	%zmm6, %zmm6, %zmm6
	vfmadd231ps	%zmm7, %zmm7, %zmm6
	vsubps	2080(%rsp), %zmm1, %zmm7
	vmulps	%zmm7, %zmm7, %zmm7
	vfmadd231ps	%zmm8, %zmm8, %zmm7
	vsubps	2016(%rsp), %zmm1, %zmm8
	vmulps	%zmm8, %zmm8, %zmm8
	vfmadd231ps	%zmm9, %zmm9, %zmm8
	vsubps	1952(%rsp), %zmm1, %zmm9
	vsubps	1888(%rsp), %zmm1, %zmm1
	vmulps	%zmm9, %zmm9, %zmm9
	vmulps	%zmm1, %zmm1, %zmm1
	vfmadd231ps	%zmm10, %zmm10, %zmm9
	vmovups	128(%rax,%r9), %zmm10
	vfmadd231ps	%zmm0, %zmm0, %zmm1
	vsubps	%zmm16, %zmm10, %zmm0
	vfmadd213ps	%zmm11, %zmm0, %zmm0
	vsubps	1824(%rsp), %zmm10, %zmm11
	vfmadd213ps	%zmm2, %zmm11, %zmm11
	vsubps	1760(%rsp), %zmm10, %zmm2
	vfmadd213ps	%zmm3, %zmm2, %zmm2
	vsubps	1696(%rsp), %zmm10, %zmm3
	vfmadd213ps	%zmm4, %zmm3, %zmm3
	vsubps	1632(%rsp), %zmm10, %zmm4
	vfmadd213ps	%zmm5, %zmm4, %zmm4
	vsubps	1568(%rsp), %zmm10, %zmm5
	vfmadd213ps	%zmm6, %zmm5, %zmm5
	vsubps	1504(%rsp), %zmm10, %zmm6
	vfmadd213ps	%zmm7, %zmm6, %zmm6
	vsubps	1440(%rsp), %zmm10, %zmm7
	vfmadd213ps	%zmm8, %zmm7, %zmm7
	vsubps	1376(%rsp), %zmm10, %zmm8
	vsubps	1312(%rsp), %zmm10, %zmm10
	vfmadd213ps	%zmm9, %zmm8, %zmm8
	vmovups	192(%rax,%r9), %zmm9
	vfmadd213ps	%zmm1, %zmm10, %zmm10
	vsubps	%zmm17, %zmm9, %zmm1
	vfmadd213ps	%zmm0, %zmm1, %zmm1
	vsubps	1248(%rsp), %zmm9, %zmm0
	vfmadd213ps	%zmm11, %zmm0, %zmm0
	vsubps	1184(%rsp), %zmm9, %zmm11
	vfmadd213ps	%zmm2, %zmm11, %zmm11
	vsubps	1120(%rsp), %zmm9, %zmm2
	vfmadd213ps	%zmm3, %zmm2, %zmm2
	vsubps	1056(%rsp), %zmm9, %zmm3
	vfmadd213ps	%zmm4, %zmm3, %zmm3
	vsubps	992(%rsp), %zmm9, %zmm4
	vfmadd213ps	%zmm5, %zmm4, %zmm4
	vsubps	928(%rsp), %zmm9, %zmm5
	vfmadd213ps	%zmm6, %zmm5, %zmm5
	vsubps	864(%rsp), %zmm9, %zmm6
	vfmadd213ps	%zmm7, %zmm6, %zmm6
	vsubps	800(%rsp), %zmm9, %zmm7
	vfmadd213ps	%zmm8, %zmm7, %zmm7
	vsubps	736(%rsp), %zmm9, %zmm8
	vinsertf64x4	$1, %ymm0, %zmm1, %zmm9
	vshuff64x2	$238, %zmm0, %zmm1, %zmm0
	vinsertf64x4	$1, %ymm2, %zmm11, %zmm1
	vshuff64x2	$238, %zmm2, %zmm11, %zmm2
	vaddps	%zmm2, %zmm1, %zmm1
	vinsertf64x4	$1, %ymm4, %zmm3, %zmm2
	vshuff64x2	$238, %zmm4, %zmm3, %zmm3
	vshuff64x2	$238, %zmm6, %zmm5, %zmm4
	vaddps	%zmm0, %zmm9, %zmm0
	vaddps	%zmm3, %zmm2, %zmm2
	vinsertf64x4	$1, %ymm6, %zmm5, %zmm3
	vaddps	%zmm4, %zmm3, %zmm3
	vfmadd213ps	%zmm10, %zmm8, %zmm8
	vinsertf64x4	$1, %ymm8, %zmm7, %zmm4
	vshuff64x2	$238, %zmm8, %zmm7, %zmm5
	vaddps	%zmm5, %zmm4, %zmm4
	vshuff64x2	$136, %zmm1, %zmm0, %zmm5
	vshuff64x2	$221, %zmm1, %zmm0, %zmm0
	vshuff64x2	$136, %zmm3, %zmm2, %zmm1
	vshuff64x2	$221, %zmm3, %zmm2, %zmm2
	vaddps	%zmm2, %zmm1, %zmm1
	vaddps	%zmm0, %zmm5, %zmm0
	vshuff64x2	$232, %zmm23, %zmm4, %zmm2
	vshuff64x2	$237, %zmm23, %zmm4, %zmm3
	vaddps	%zmm3, %zmm2, %zmm2
	vmovaps	%zmm0, %zmm3
	vpermt2pd	%zmm1, %zmm19, %zmm3
	vpermt2pd	%zmm1, %zmm20, %zmm0
	vmovaps	%zmm2, %zmm1
	vpermt2pd	%zmm23, %zmm21, %zmm1
	vpermt2pd	%zmm23, %zmm22, %zmm2
	vaddps	%zmm0, %zmm3, %zmm0
	vaddps	%zmm2, %zmm1, %zmm1
	vmovaps	%zmm0, %zmm2
	vpermt2ps	%zmm1, %zmm12, %zmm2
	vpermt2ps	%zmm1, %zmm13, %zmm0
	vmovaps	%zmm24, %zmm1
	vaddps	%zmm0, %zmm2, %zmm0
	vmovups	2656(%rsp), %zmm2
	vpermt2ps	%zmm0, %zmm2, %zmm1
	vmovaps	%zmm24, %zmm0 {%k1}
	vminps	%ymm1, %ymm0, %ymm1
	vextractf128	$1, %ymm1, %xmm2
	vminps	%xmm2, %xmm1, %xmm1
	vshufpd	$3, %xmm1, %xmm1, %xmm2
	vminps	%xmm2, %xmm1, %xmm1
	vshufps	$85, %xmm1, %xmm1, %xmm2
	vminps	%xmm2, %xmm1, %xmm1
	vbroadcastss	%xmm1, %zmm2
	vmulss	2272(%rsp), %xmm1, %xmm1
	vcmpeqps	%zmm2, %zmm0, %k0
	vaddss	2208(%rsp), %xmm1, %xmm1
	kmovd	%k0, %ecx
	orl	$65536, %ecx
	tzcntl	%ecx, %r10d
	vpbroadcastw	%r10d, %ymm2
	vpcmpeqw	2592(%rsp), %ymm2, %k2
	vblendmps	%zmm24, %zmm0, %zmm2 {%k2}
	vandps	2528(%rsp), %zmm0, %zmm0
	vextractf64x4	$1, %zmm2, %ymm3
	vpcmpltd	2464(%rsp), %zmm0, %k0
	vminps	%ymm3, %ymm2, %ymm2
	vextractf128	$1, %ymm2, %xmm3
	vminps	%xmm3, %xmm2, %xmm2
	vshufpd	$3, %xmm2, %xmm2, %xmm3
	knotw	%k0, %k0
	vminps	%xmm3, %xmm2, %xmm2
	kmovd	%k0, %ecx
	vmovshdup	%xmm2, %xmm3
	vminss	%xmm3, %xmm2, %xmm2
	vmulss	2400(%rsp), %xmm2, %xmm0
	vaddss	2336(%rsp), %xmm0, %xmm0
	testl	$1023, %ecx
	jne	.LBB0_17
	vucomiss	%xmm1, %xmm0
	ja	.LBB0_20
.LBB0_17:
	movabsq	$.LCPI0_14, %rcx
	movq	$-256, %r10
	vbroadcastsd	(%rcx), %zmm13
	movabsq	$.LCPI0_15, %rcx
	vmovapd	(%rcx), %zmm12
	vmovapd	%zmm12, %zmm27
	vmovapd	%zmm13, %zmm26
	vmovapd	%zmm12, %zmm28
	vmovapd	%zmm13, %zmm29
	vmovapd	%zmm12, %zmm30
	vmovapd	%zmm13, %zmm31
	vmovapd	%zmm12, %zmm0
	vmovapd	%zmm13, %zmm1
	vmovapd	%zmm12, %zmm2
	vmovapd	%zmm13, %zmm3
	vmovapd	%zmm12, %zmm4
	vmovapd	%zmm13, %zmm5
	vmovapd	%zmm12, %zmm6
	vmovapd	%zmm13, %zmm7
	vmovapd	%zmm12, %zmm8
	vmovapd	%zmm13, %zmm9
	vmovapd	%zmm12, %zmm10
	vmovapd	%zmm13, %zmm11
	.p2align	4
.LBB0_18:
	vmovups	224(%rdx,%r10), %ymm14
	vmovups	256(%rdx,%r10), %ymm15
	vsubps	256(%rsi,%r10), %ymm14, %ymm16
	vsubps	288(%rsi,%r10), %ymm15, %ymm17
	vsubps	800(%rsi,%r10), %ymm15, %ymm18
	vmulps	%ymm16, %ymm16, %ymm16
	vmulps	%ymm17, %ymm17, %ymm17
	vmulps	%ymm18, %ymm18, %ymm18
	vcvtps2pd	%ymm16, %zmm16
	vcvtps2pd	%ymm18, %zmm18
	vaddpd	%zmm16, %zmm10, %zmm10
	vcvtps2pd	%ymm17, %zmm16
	vsubps	544(%rsi,%r10), %ymm15, %ymm17
	vaddpd	%zmm18, %zmm7, %zmm7
	vsubps	1568(%rsi,%r10), %ymm15, %ymm18
	vaddpd	%zmm16, %zmm11, %zmm11
	vsubps	512(%rsi,%r10), %ymm14, %ymm16
	vmulps	%ymm17, %ymm17, %ymm17
	vmulps	%ymm18, %ymm18, %ymm18
	vcvtps2pd	%ymm18, %zmm18
	vmulps	%ymm16, %ymm16, %ymm16
	vcvtps2pd	%ymm16, %zmm16
	vaddpd	%zmm18, %zmm1, %zmm1
	vsubps	2336(%rsi,%r10), %ymm15, %ymm18
	vaddpd	%zmm16, %zmm8, %zmm8
	vcvtps2pd	%ymm17, %zmm16
	vsubps	768(%rsi,%r10), %ymm14, %ymm17
	vmulps	%ymm18, %ymm18, %ymm18
	vaddpd	%zmm16, %zmm9, %zmm9
	vsubps	1024(%rsi,%r10), %ymm14, %ymm16
	vcvtps2pd	%ymm18, %zmm18
	vmulps	%ymm17, %ymm17, %ymm17
	vcvtps2pd	%ymm17, %zmm17
	vaddpd	%zmm18, %zmm26, %zmm26
	vmulps	%ymm16, %ymm16, %ymm16
	vaddpd	%zmm17, %zmm6, %zmm6
	vsubps	1056(%rsi,%r10), %ymm15, %ymm17
	vcvtps2pd	%ymm16, %zmm16
	vaddpd	%zmm16, %zmm4, %zmm4
	vmulps	%ymm17, %ymm17, %ymm17
	vcvtps2pd	%ymm17, %zmm16
	vsubps	1312(%rsi,%r10), %ymm15, %ymm17
	vaddpd	%zmm16, %zmm5, %zmm5
	vsubps	1280(%rsi,%r10), %ymm14, %ymm16
	vmulps	%ymm17, %ymm17, %ymm17
	vmulps	%ymm16, %ymm16, %ymm16
	vcvtps2pd	%ymm16, %zmm16
	vaddpd	%zmm16, %zmm2, %zmm2
	vcvtps2pd	%ymm17, %zmm16
	vsubps	1536(%rsi,%r10), %ymm14, %ymm17
	vaddpd	%zmm16, %zmm3, %zmm3
	vsubps	1792(%rsi,%r10), %ymm14, %ymm16
	vmulps	%ymm17, %ymm17, %ymm17
	vcvtps2pd	%ymm17, %zmm17
	vmulps	%ymm16, %ymm16, %ymm16
	vaddpd	%zmm17, %zmm0, %zmm0
	vsubps	1824(%rsi,%r10), %ymm15, %ymm17
	vcvtps2pd	%ymm16, %zmm16
	vaddpd	%zmm16, %zmm30, %zmm30
	vmulps	%ymm17, %ymm17, %ymm17
	vcvtps2pd	%ymm17, %zmm16
	vsubps	2080(%rsi,%r10), %ymm15, %ymm17
	vsubps	2592(%rsi,%r10), %ymm15, %ymm15
	vaddpd	%zmm16, %zmm31, %zmm31
	vsubps	2048(%rsi,%r10), %ymm14, %ymm16
	vmulps	%ymm17, %ymm17, %ymm17
	vmulps	%ymm15, %ymm15, %ymm15
	vcvtps2pd	%ymm15, %zmm15
	vmulps	%ymm16, %ymm16, %ymm16
	vcvtps2pd	%ymm16, %zmm16
	vaddpd	%zmm15, %zmm13, %zmm13
	vaddpd	%zmm16, %zmm28, %zmm28
	vcvtps2pd	%ymm17, %zmm16
	vsubps	2304(%rsi,%r10), %ymm14, %ymm17
	vsubps	2560(%rsi,%r10), %ymm14, %ymm14
	addq	$64, %r10
	vaddpd	%zmm16, %zmm29, %zmm29
	vmulps	%ymm17, %ymm17, %ymm17
	vmulps	%ymm14, %ymm14, %ymm14
	vcvtps2pd	%ymm17, %zmm17
	vcvtps2pd	%ymm14, %zmm14
	vaddpd	%zmm17, %zmm27, %zmm27
	vaddpd	%zmm14, %zmm12, %zmm12
	jne	.LBB0_18
	vaddpd	%zmm0, %zmm1, %zmm0
	vaddpd	%zmm2, %zmm3, %zmm2
	vaddpd	%zmm4, %zmm5, %zmm4
	vaddpd	%zmm6, %zmm7, %zmm6
	vaddpd	%zmm8, %zmm9, %zmm8
	vaddpd	%zmm10, %zmm11, %zmm10
	vmovups	544(%rsp), %zmm14
	vmovups	480(%rsp), %zmm15
	vmovups	416(%rsp), %zmm16
	vmovups	352(%rsp), %zmm17
	vmovups	288(%rsp), %zmm18
	vextractf64x4	$1, %zmm0, %ymm1
	vextractf64x4	$1, %zmm2, %ymm3
	vextractf64x4	$1, %zmm4, %ymm5
	vextractf64x4	$1, %zmm6, %ymm7
	vextractf64x4	$1, %zmm8, %ymm9
	vextractf64x4	$1, %zmm10, %ymm11
	vaddpd	%zmm1, %zmm0, %zmm0
	vaddpd	%zmm3, %zmm2, %zmm2
	vaddpd	%zmm5, %zmm4, %zmm4
	vaddpd	%zmm7, %zmm6, %zmm6
	vaddpd	%zmm9, %zmm8, %zmm8
	vaddpd	%zmm11, %zmm10, %zmm10
	vextractf128	$1, %ymm0, %xmm1
	vextractf128	$1, %ymm2, %xmm3
	vextractf128	$1, %ymm4, %xmm5
	vextractf128	$1, %ymm6, %xmm7
	vextractf128	$1, %ymm8, %xmm9
	vextractf128	$1, %ymm10, %xmm11
	vaddpd	%xmm1, %xmm0, %xmm0
	vaddpd	%xmm3, %xmm2, %xmm2
	vaddpd	%xmm5, %xmm4, %xmm4
	vaddpd	%xmm7, %xmm6, %xmm6
	vaddpd	%xmm9, %xmm8, %xmm8
	vaddpd	%xmm11, %xmm10, %xmm10
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vshufpd	$1, %xmm2, %xmm2, %xmm3
	vshufpd	$1, %xmm4, %xmm4, %xmm5
	vshufpd	$1, %xmm6, %xmm6, %xmm7
	vshufpd	$1, %xmm8, %xmm8, %xmm9
	vshufpd	$1, %xmm10, %xmm10, %xmm11
	vaddsd	%xmm1, %xmm0, %xmm1
	vaddpd	%zmm30, %zmm31, %zmm0
	vaddsd	%xmm3, %xmm2, %xmm2
	vaddsd	%xmm5, %xmm4, %xmm4
	vaddsd	%xmm7, %xmm6, %xmm6
	vaddsd	%xmm9, %xmm8, %xmm8
	vaddsd	%xmm11, %xmm10, %xmm10
	vmovups	-32(%rsp), %zmm30
	vmovups	-96(%rsp), %zmm31
	vextractf64x4	$1, %zmm0, %ymm3
	vaddpd	%zmm3, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm3
	vaddpd	%xmm3, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm3
	vaddsd	%xmm3, %xmm0, %xmm3
	vaddpd	%zmm28, %zmm29, %zmm0
	vmovups	96(%rsp), %zmm28
	vmovups	32(%rsp), %zmm29
	vextractf64x4	$1, %zmm0, %ymm5
	vaddpd	%zmm5, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm5
	vaddpd	%xmm5, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm5
	vaddsd	%xmm5, %xmm0, %xmm7
	vaddpd	%zmm27, %zmm26, %zmm0
	vmovups	224(%rsp), %zmm26
	vmovups	160(%rsp), %zmm27
	vextractf64x4	$1, %zmm0, %ymm5
	vaddpd	%zmm5, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm5
	vaddpd	%xmm5, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm5
	vaddsd	%xmm5, %xmm0, %xmm9
	vaddpd	%zmm12, %zmm13, %zmm0
	vmovups	608(%rsp), %zmm13
	vextractf64x4	$1, %zmm0, %ymm5
	vaddpd	%zmm5, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm5
	vaddpd	%xmm5, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm5
	vaddsd	%xmm5, %xmm0, %xmm11
	vcvtsd2ss	%xmm10, %xmm10, %xmm0
	vcvtsd2ss	%xmm8, %xmm8, %xmm8
	vucomiss	%xmm0, %xmm0
	vcvtsd2ss	%xmm6, %xmm6, %xmm10
	vcvtsd2ss	%xmm4, %xmm4, %xmm12
	vcvtsd2ss	%xmm2, %xmm2, %xmm6
	vcvtsd2ss	%xmm1, %xmm1, %xmm5
	vcvtsd2ss	%xmm3, %xmm3, %xmm4
	vcvtsd2ss	%xmm7, %xmm7, %xmm3
	vcvtsd2ss	%xmm9, %xmm9, %xmm2
	vcvtsd2ss	%xmm11, %xmm11, %xmm1
	vcmpltss	%xmm0, %xmm8, %k0
	vcmpunordss	%xmm25, %xmm8, %k2
	setnp	%r10b
	korw	%k2, %k0, %k0
	kmovd	%k0, %ecx
	andb	%cl, %r10b
	kmovd	%r10d, %k2
	movzbl	%r10b, %ebx
	vmovss	%xmm8, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm10, %k2
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm10, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	movl	$2, %ecx
	kmovd	%r10d, %k2
	cmovneq	%rcx, %rbx
	vmovss	%xmm10, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm12, %k2
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm12, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	movl	$3, %ecx
	kmovd	%r10d, %k2
	cmovneq	%rcx, %rbx
	vmovss	%xmm12, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm6, %k2
	vmovups	672(%rsp), %zmm12
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm6, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	movl	$4, %ecx
	kmovd	%r10d, %k2
	cmovneq	%rcx, %rbx
	vmovss	%xmm6, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm5, %k2
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm5, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	kmovd	%r10d, %k2
	cmovneq	%r14, %rbx
	vmovss	%xmm5, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm4, %k2
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm4, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	kmovd	%r10d, %k2
	cmovneq	%r15, %rbx
	vmovss	%xmm4, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm3, %k2
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm3, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	kmovd	%r10d, %k2
	cmovneq	%r12, %rbx
	vmovss	%xmm3, %xmm0, %xmm0 {%k2}
	vcmpunordss	%xmm25, %xmm2, %k2
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm2, %k0
	korw	%k0, %k2, %k0
	kmovd	%k0, %ecx
	setnp	%r10b
	andb	%cl, %r10b
	kmovd	%r10d, %k2
	cmovneq	%r13, %rbx
	vmovss	%xmm2, %xmm0, %xmm0 {%k2}
	movq	%rbx, %r10
	vucomiss	%xmm1, %xmm0
	cmovaq	%rbp, %r10
	vucomiss	%xmm1, %xmm1
	cmovpq	%rbp, %r10
	vucomiss	%xmm0, %xmm0
	cmovpq	%rbx, %r10
	jmp	.LBB0_20
.LBB0_21:
	addq	$3112, %rsp
	popq	%rbx
	popq	%r12
	popq	%r13
	popq	%r14
	popq	%r15
	popq	%rbp
	vzeroupper
	retq
.Lfunc_end0:
	.size	kiln_kernel_host, .Lfunc_end0-kiln_kernel_host

	.section	".note.GNU-stack","",@progbits
