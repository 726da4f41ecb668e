# region 0: scatter, optimized tier
	.file	"LLVMDialectModule"
	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
.LCPI0_0:
	.long	0x00000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
.LCPI0_9:
	.quad	0x0000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.quad	0x8000000000000000
	.section	.rodata.cst4,"aM",@progbits,4
	.p2align	2, 0x0
.LCPI0_1:
	.long	0x7f800000
.LCPI0_3:
	.long	0x3f7fff70
.LCPI0_4:
	.long	0x83800000
.LCPI0_5:
	.long	0x3f800048
.LCPI0_6:
	.long	0x03800000
.LCPI0_7:
	.long	2147483647
	.section	.rodata.cst16,"aM",@progbits,16
	.p2align	4, 0x0
.LCPI0_2:
	.zero	4
	.zero	4
	.long	4
	.long	0
	.section	.rodata.cst8,"aM",@progbits,8
	.p2align	3, 0x0
.LCPI0_8:
	.quad	0x8000000000000000
	.section	.ltext,"axl",@progbits
	.globl	kiln_kernel_host
	.p2align	4
	.type	kiln_kernel_host,@function
kiln_kernel_host:
	cmpq	%rcx, %rdx
	jge	.LBB0_11
	pushq	%rbp
	pushq	%r15
	pushq	%r14
	pushq	%r13
	pushq	%r12
	pushq	%rbx
	subq	$2216, %rsp
	movabsq	$.LCPI0_2, %r11
	movq	8(%rdi), %rsi
	movq	(%rdi), %rax
	movq	%rdx, %r10
	shlq	$8, %rdx
	movq	16(%rdi), %r8
	movq	24(%rdi), %rdi
	movl	$7, %r12d
	movl	$8, %r13d
	movl	$9, %ebp
	vmovaps	(%r11), %xmm2
	movabsq	$.LCPI0_3, %r11
	vmovss	(%r11), %xmm1
	movabsq	$.LCPI0_4, %r11
	vmovups	1536(%rsi), %zmm5
	vmovups	1600(%rsi), %zmm6
	leaq	32(%rdx,%rax), %r9
	movabsq	$.LCPI0_0, %rdx
	vmovups	320(%rsi), %zmm15
	vmovups	512(%rsi), %zmm16
	vmovups	576(%rsi), %zmm17
	vmovups	768(%rsi), %zmm27
	vmovups	832(%rsi), %zmm28
	vmovups	1024(%rsi), %zmm29
	vmovups	1088(%rsi), %zmm30
	vmovups	1280(%rsi), %zmm31
	vmovups	1344(%rsi), %zmm0
	vmovups	(%rsi), %zmm10
	vmovups	64(%rsi), %zmm11
	vmovups	128(%rsi), %zmm12
	vmovups	192(%rsi), %zmm13
	vmovups	256(%rsi), %zmm14
	vmovaps	(%rdx), %zmm23
	movabsq	$.LCPI0_1, %rdx
	vmovss	(%rdx), %xmm24
	vbroadcastss	(%rdx), %ymm3
	vmovaps	%xmm2, -112(%rsp)
	vmovss	(%r11), %xmm2
	movabsq	$.LCPI0_5, %r11
	vmovss	%xmm1, -116(%rsp)
	vmovss	(%r11), %xmm1
	movabsq	$.LCPI0_6, %r11
	vmovss	(%r11), %xmm4
	movabsq	$.LCPI0_7, %r11
	vmovups	%zmm5, 2080(%rsp)
	vmovups	1792(%rsi), %zmm5
	vmovups	%zmm6, 2016(%rsp)
	vmovups	1856(%rsi), %zmm6
	vmovups	%zmm0, 2144(%rsp)
	vmovups	%zmm15, 416(%rsp)
	vmovups	%zmm16, 352(%rsp)
	vmovups	%zmm17, 288(%rsp)
	vmovups	%zmm27, 224(%rsp)
	vmovups	%zmm28, 160(%rsp)
	vmovups	%zmm29, 96(%rsp)
	vmovups	%zmm30, 32(%rsp)
	vmovups	%zmm31, -32(%rsp)
	vmovups	%ymm3, -96(%rsp)
	vmovss	%xmm2, -120(%rsp)
	vmovups	640(%rsi), %zmm2
	vmovss	%xmm1, -124(%rsp)
	vbroadcastss	(%r11), %ymm1
	vmovss	%xmm4, -128(%rsp)
	vmovups	%zmm5, 1952(%rsp)
	vmovups	2048(%rsi), %zmm5
	vmovups	%zmm6, 1888(%rsp)
	vmovups	2112(%rsi), %zmm6
	vmovups	%zmm2, 1440(%rsp)
	vmovups	896(%rsi), %zmm2
	vmovups	%ymm1, -64(%rsp)
	vmovups	448(%rsi), %zmm1
	vmovups	%zmm5, 1824(%rsp)
	vmovups	2304(%rsi), %zmm5
	vmovups	%zmm6, 1760(%rsp)
	vmovups	2368(%rsi), %zmm6
	vmovups	%zmm2, 1312(%rsp)
	vmovups	1152(%rsi), %zmm2
	vmovups	%zmm1, 1504(%rsp)
	vmovups	704(%rsi), %zmm1
	vmovups	%zmm5, 1696(%rsp)
	vmovups	384(%rsi), %zmm5
	vmovups	%zmm6, 1632(%rsp)
	vmovups	%zmm2, 1184(%rsp)
	vmovups	1408(%rsi), %zmm2
	vmovups	%zmm1, 1376(%rsp)
	vmovups	960(%rsi), %zmm1
	vmovups	%zmm5, 1568(%rsp)
	vmovups	%zmm2, 1056(%rsp)
	vmovups	1664(%rsi), %zmm2
	vmovups	%zmm1, 1248(%rsp)
	vmovups	1216(%rsi), %zmm1
	vmovups	%zmm2, 928(%rsp)
	vmovups	1920(%rsi), %zmm2
	vmovups	%zmm1, 1120(%rsp)
	vmovups	1472(%rsi), %zmm1
	vmovups	%zmm2, 800(%rsp)
	vmovups	2176(%rsi), %zmm2
	vmovups	%zmm1, 992(%rsp)
	vmovups	1728(%rsi), %zmm1
	vmovups	%zmm2, 672(%rsp)
	vmovups	2432(%rsi), %zmm2
	vmovups	%zmm1, 864(%rsp)
	vmovups	1984(%rsi), %zmm1
	vmovups	%zmm2, 544(%rsp)
	vmovups	%zmm1, 736(%rsp)
	vmovups	2240(%rsi), %zmm1
	vmovups	%zmm1, 608(%rsp)
	vmovups	2496(%rsi), %zmm1
	vmovups	%zmm1, 480(%rsp)
	jmp	.LBB0_2
	.p2align	4
.LBB0_8:
	vaddpd	%zmm0, %zmm1, %zmm0
	vaddpd	%zmm2, %zmm3, %zmm2
	vaddpd	%zmm4, %zmm5, %zmm4
	vextractf64x4	$1, %zmm0, %ymm1
	vextractf64x4	$1, %zmm2, %ymm3
	vextractf64x4	$1, %zmm4, %ymm5
	vaddpd	%zmm1, %zmm0, %zmm0
	vaddpd	%zmm3, %zmm2, %zmm2
	vaddpd	%zmm5, %zmm4, %zmm4
	vextractf128	$1, %ymm0, %xmm1
	vextractf128	$1, %ymm2, %xmm3
	vextractf128	$1, %ymm4, %xmm5
	vaddpd	%xmm1, %xmm0, %xmm0
	vaddpd	%xmm3, %xmm2, %xmm2
	vaddpd	%xmm5, %xmm4, %xmm4
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vshufpd	$1, %xmm2, %xmm2, %xmm3
	vshufpd	$1, %xmm4, %xmm4, %xmm5
	vaddsd	%xmm1, %xmm0, %xmm1
	vaddpd	%zmm30, %zmm31, %zmm0
	vaddsd	%xmm3, %xmm2, %xmm2
	vaddsd	%xmm5, %xmm4, %xmm4
	vmovups	32(%rsp), %zmm30
	vmovups	-32(%rsp), %zmm31
	vextractf64x4	$1, %zmm0, %ymm3
	vaddpd	%zmm3, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm3
	vaddpd	%xmm3, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm3
	vaddsd	%xmm3, %xmm0, %xmm3
	vaddpd	%zmm28, %zmm29, %zmm0
	vmovups	160(%rsp), %zmm28
	vmovups	96(%rsp), %zmm29
	vextractf64x4	$1, %zmm0, %ymm5
	vaddpd	%zmm5, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm5
	vaddpd	%xmm5, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm5
	vaddsd	%xmm5, %xmm0, %xmm5
	vaddpd	%zmm26, %zmm27, %zmm0
	vmovups	224(%rsp), %zmm27
	vextractf64x4	$1, %zmm0, %ymm8
	vaddpd	%zmm8, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm8
	vaddpd	%xmm0, %xmm8, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm8
	vaddsd	%xmm0, %xmm8, %xmm8
	vaddpd	%zmm22, %zmm25, %zmm0
	vextractf64x4	$1, %zmm0, %ymm9
	vaddpd	%zmm9, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm9
	vaddpd	%xmm0, %xmm9, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm9
	vaddsd	%xmm0, %xmm9, %xmm9
	vaddpd	%zmm20, %zmm21, %zmm0
	vextractf64x4	$1, %zmm0, %ymm10
	vaddpd	%zmm10, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm10
	vaddpd	%xmm0, %xmm10, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm10
	vaddsd	%xmm0, %xmm10, %xmm10
	vaddpd	%zmm19, %zmm18, %zmm0
	vextractf64x4	$1, %zmm0, %ymm11
	vaddpd	%zmm11, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm11
	vaddpd	%xmm0, %xmm11, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm11
	vaddsd	%xmm0, %xmm11, %xmm11
	vaddpd	%zmm6, %zmm7, %zmm0
	vextractf64x4	$1, %zmm0, %ymm6
	vaddpd	%zmm6, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm6
	vaddpd	%xmm6, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm6
	vaddsd	%xmm6, %xmm0, %xmm7
	vcvtsd2ss	%xmm4, %xmm4, %xmm0
	vcvtsd2ss	%xmm2, %xmm2, %xmm12
	vucomiss	%xmm0, %xmm0
	vcvtsd2ss	%xmm1, %xmm1, %xmm18
	vcvtsd2ss	%xmm7, %xmm7, %xmm1
	vxorps	%xmm7, %xmm7, %xmm7
	vcvtsd2ss	%xmm3, %xmm3, %xmm19
	vcvtsd2ss	%xmm5, %xmm5, %xmm6
	vcvtsd2ss	%xmm10, %xmm10, %xmm3
	vcvtsd2ss	%xmm11, %xmm11, %xmm2
	vcvtsd2ss	%xmm8, %xmm8, %xmm5
	vcvtsd2ss	%xmm9, %xmm9, %xmm4
	vmovaps	%zmm13, %zmm10
	vmovaps	%zmm14, %zmm11
	vmovaps	%zmm16, %zmm13
	vmovaps	%zmm17, %zmm14
	vmovups	352(%rsp), %zmm16
	vmovups	288(%rsp), %zmm17
	vcmpltss	%xmm0, %xmm12, %k0
	vcmpunordss	%xmm7, %xmm12, %k1
	setnp	%r14b
	korw	%k1, %k0, %k0
	kmovd	%k0, %r11d
	andb	%r11b, %r14b
	kmovd	%r14d, %k1
	movzbl	%r14b, %ebx
	vmovss	%xmm12, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm18, %k1
	vmovaps	%zmm15, %zmm12
	vmovups	416(%rsp), %zmm15
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm18, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	movl	$2, %r11d
	kmovd	%r14d, %k1
	cmovneq	%r11, %rbx
	vmovss	%xmm18, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm19, %k1
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm19, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	movl	$3, %r11d
	kmovd	%r14d, %k1
	cmovneq	%r11, %rbx
	vmovss	%xmm19, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm6, %k1
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm6, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	movl	$4, %r11d
	kmovd	%r14d, %k1
	cmovneq	%r11, %rbx
	vmovss	%xmm6, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm5, %k1
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm5, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	movl	$5, %r11d
	kmovd	%r14d, %k1
	cmovneq	%r11, %rbx
	vmovss	%xmm5, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm4, %k1
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm4, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	movl	$6, %r11d
	kmovd	%r14d, %k1
	cmovneq	%r11, %rbx
	vmovss	%xmm4, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm3, %k1
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm3, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	kmovd	%r14d, %k1
	cmovneq	%r12, %rbx
	vmovss	%xmm3, %xmm0, %xmm0 {%k1}
	vcmpunordss	%xmm7, %xmm2, %k1
	vucomiss	%xmm0, %xmm0
	vcmpltss	%xmm0, %xmm2, %k0
	korw	%k0, %k1, %k0
	kmovd	%k0, %r11d
	setnp	%r14b
	andb	%r11b, %r14b
	kmovd	%r14d, %k1
	cmovneq	%r13, %rbx
	vmovss	%xmm2, %xmm0, %xmm0 {%k1}
	movq	%rbx, %r11
	vucomiss	%xmm1, %xmm0
	cmovaq	%rbp, %r11
	vucomiss	%xmm1, %xmm1
	cmovpq	%rbp, %r11
	vucomiss	%xmm0, %xmm0
	cmovpq	%rbx, %r11
.LBB0_9:
	movq	%r11, %rbx
	shlq	$8, %rbx
	vmovups	(%rax,%rdx), %zmm0
	vmovups	64(%rax,%rdx), %zmm1
	vmovups	128(%rax,%rdx), %zmm2
	vmovups	192(%rax,%rdx), %zmm3
	incq	%r10
	addq	$256, %r9
	vaddps	(%r8,%rbx), %zmm0, %zmm0
	vaddps	64(%r8,%rbx), %zmm1, %zmm1
	vaddps	128(%r8,%rbx), %zmm2, %zmm2
	vaddps	192(%r8,%rbx), %zmm3, %zmm3
	vmovups	%zmm0, (%r8,%rbx)
	vmovups	%zmm1, 64(%r8,%rbx)
	vmovups	%zmm2, 128(%r8,%rbx)
	vmovups	%zmm3, 192(%r8,%rbx)
	incq	(%rdi,%r11,8)
	cmpq	%rcx, %r10
	je	.LBB0_10
.LBB0_2:
	movq	%r10, %rdx
	shlq	$8, %rdx
	xorl	%r11d, %r11d
	vmovups	(%rax,%rdx), %zmm2
	vmovups	128(%rax,%rdx), %zmm3
	vmovups	192(%rax,%rdx), %zmm1
	vmovups	64(%rax,%rdx), %zmm0
	vsubps	1568(%rsp), %zmm3, %zmm22
	vsubps	1312(%rsp), %zmm3, %zmm21
	vsubps	%zmm10, %zmm2, %zmm6
	vsubps	%zmm12, %zmm3, %zmm18
	vsubps	%zmm14, %zmm2, %zmm8
	vsubps	%zmm15, %zmm0, %zmm9
	vsubps	%zmm27, %zmm2, %zmm25
	vsubps	%zmm16, %zmm2, %zmm19
	vsubps	%zmm28, %zmm0, %zmm4
	vsubps	%zmm29, %zmm2, %zmm5
	vsubps	%zmm11, %zmm0, %zmm7
	vsubps	%zmm30, %zmm0, %zmm26
	vsubps	%zmm17, %zmm0, %zmm20
	vfmadd213ps	%zmm23, %zmm6, %zmm6
	vfmadd213ps	%zmm23, %zmm8, %zmm8
	vfmadd213ps	%zmm23, %zmm25, %zmm25
	vfmadd213ps	%zmm23, %zmm19, %zmm19
	vfmadd213ps	%zmm23, %zmm5, %zmm5
	vfmadd213ps	%zmm6, %zmm18, %zmm18
	vsubps	%zmm13, %zmm1, %zmm6
	vfmadd213ps	%zmm8, %zmm22, %zmm22
	vfmadd213ps	%zmm25, %zmm21, %zmm21
	vsubps	1376(%rsp), %zmm1, %zmm8
	vsubps	1952(%rsp), %zmm2, %zmm25
	vfmadd231ps	%zmm6, %zmm6, %zmm18
	vsubps	1504(%rsp), %zmm1, %zmm6
	vfmadd231ps	%zmm7, %zmm7, %zmm18
	vsubps	%zmm31, %zmm2, %zmm7
	vfmadd213ps	%zmm23, %zmm25, %zmm25
	vfmadd213ps	%zmm23, %zmm7, %zmm7
	vfmadd231ps	%zmm6, %zmm6, %zmm22
	vsubps	1440(%rsp), %zmm3, %zmm6
	vfmadd231ps	%zmm9, %zmm9, %zmm22
	vsubps	1248(%rsp), %zmm1, %zmm9
	vfmadd213ps	%zmm19, %zmm6, %zmm6
	vsubps	1120(%rsp), %zmm1, %zmm19
	vfmadd231ps	%zmm9, %zmm9, %zmm21
	vsubps	2080(%rsp), %zmm2, %zmm9
	vfmadd231ps	%zmm8, %zmm8, %zmm6
	vsubps	2144(%rsp), %zmm0, %zmm8
	vfmadd231ps	%zmm4, %zmm4, %zmm21
	vsubps	1184(%rsp), %zmm3, %zmm4
	vfmadd231ps	%zmm20, %zmm20, %zmm6
	vsubps	2016(%rsp), %zmm0, %zmm20
	vfmadd213ps	%zmm23, %zmm9, %zmm9
	vfmadd213ps	%zmm5, %zmm4, %zmm4
	vfmadd231ps	%zmm19, %zmm19, %zmm4
	vsubps	1056(%rsp), %zmm3, %zmm19
	vfmadd231ps	%zmm26, %zmm26, %zmm4
	vsubps	928(%rsp), %zmm3, %zmm26
	vfmadd213ps	%zmm7, %zmm19, %zmm19
	vsubps	992(%rsp), %zmm1, %zmm7
	vfmadd213ps	%zmm9, %zmm26, %zmm26
	vsubps	736(%rsp), %zmm1, %zmm9
	vfmadd231ps	%zmm7, %zmm7, %zmm19
	vsubps	864(%rsp), %zmm1, %zmm7
	vfmadd231ps	%zmm8, %zmm8, %zmm19
	vsubps	1888(%rsp), %zmm0, %zmm8
	vfmadd231ps	%zmm7, %zmm7, %zmm26
	vsubps	800(%rsp), %zmm3, %zmm7
	vfmadd231ps	%zmm20, %zmm20, %zmm26
	vsubps	672(%rsp), %zmm3, %zmm20
	vsubps	544(%rsp), %zmm3, %zmm3
	vfmadd213ps	%zmm25, %zmm7, %zmm7
	vfmadd231ps	%zmm9, %zmm9, %zmm7
	vsubps	1824(%rsp), %zmm2, %zmm9
	vsubps	1696(%rsp), %zmm2, %zmm2
	vfmadd231ps	%zmm8, %zmm8, %zmm7
	vsubps	608(%rsp), %zmm1, %zmm8
	vsubps	480(%rsp), %zmm1, %zmm1
	vfmadd213ps	%zmm23, %zmm9, %zmm9
	vfmadd213ps	%zmm23, %zmm2, %zmm2
	vfmadd213ps	%zmm9, %zmm20, %zmm20
	vfmadd213ps	%zmm2, %zmm3, %zmm3
	vfmadd231ps	%zmm8, %zmm8, %zmm20
	vsubps	1760(%rsp), %zmm0, %zmm8
	vsubps	1632(%rsp), %zmm0, %zmm0
	vfmadd231ps	%zmm1, %zmm1, %zmm3
	vfmadd231ps	%zmm0, %zmm0, %zmm3
	vextractf64x4	$1, %zmm18, %ymm0
	vfmadd231ps	%zmm8, %zmm8, %zmm20
	vaddps	%zmm0, %zmm18, %zmm0
	vextractf128	$1, %ymm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vmovshdup	%xmm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm18
	vextractf64x4	$1, %zmm22, %ymm0
	vaddps	%zmm0, %zmm22, %zmm0
	vcmpneq_oqss	%xmm24, %xmm18, %k1
	vextractf128	$1, %ymm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vmovshdup	%xmm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vextractf64x4	$1, %zmm6, %ymm1
	vaddps	%zmm1, %zmm6, %zmm1
	vminss	%xmm24, %xmm0, %xmm9
	vextractf128	$1, %ymm1, %xmm2
	vaddps	%xmm2, %xmm1, %xmm1
	vshufpd	$1, %xmm1, %xmm1, %xmm2
	vaddps	%xmm2, %xmm1, %xmm1
	vmovshdup	%xmm1, %xmm2
	vaddps	%xmm2, %xmm1, %xmm2
	vextractf64x4	$1, %zmm21, %ymm1
	vaddps	%zmm1, %zmm21, %zmm1
	vextractf128	$1, %ymm1, %xmm6
	vaddps	%xmm6, %xmm1, %xmm1
	vshufpd	$1, %xmm1, %xmm1, %xmm6
	vaddps	%xmm6, %xmm1, %xmm1
	vmovshdup	%xmm1, %xmm6
	vaddps	%xmm6, %xmm1, %xmm6
	vextractf64x4	$1, %zmm4, %ymm1
	vaddps	%zmm1, %zmm4, %zmm1
	vextractf128	$1, %ymm1, %xmm4
	vaddps	%xmm4, %xmm1, %xmm1
	vshufpd	$1, %xmm1, %xmm1, %xmm4
	vaddps	%xmm4, %xmm1, %xmm1
	vmovshdup	%xmm1, %xmm4
	vaddps	%xmm4, %xmm1, %xmm1
	vextractf64x4	$1, %zmm19, %ymm4
	vaddps	%zmm4, %zmm19, %zmm4
	vextractf128	$1, %ymm4, %xmm8
	vaddps	%xmm4, %xmm8, %xmm4
	vshufpd	$1, %xmm4, %xmm4, %xmm8
	vaddps	%xmm4, %xmm8, %xmm4
	vmovshdup	%xmm4, %xmm8
	vaddps	%xmm4, %xmm8, %xmm4
	vextractf64x4	$1, %zmm26, %ymm8
	vaddps	%zmm8, %zmm26, %zmm5
	vextractf128	$1, %ymm5, %xmm8
	vaddps	%xmm5, %xmm8, %xmm5
	vshufpd	$1, %xmm5, %xmm5, %xmm8
	vaddps	%xmm5, %xmm8, %xmm5
	vmovshdup	%xmm5, %xmm8
	vaddps	%xmm8, %xmm5, %xmm19
	vextractf64x4	$1, %zmm7, %ymm5
	vaddps	%zmm5, %zmm7, %zmm5
	vextractf128	$1, %ymm5, %xmm7
	vaddps	%xmm7, %xmm5, %xmm5
	vshufpd	$1, %xmm5, %xmm5, %xmm7
	vaddps	%xmm7, %xmm5, %xmm5
	vmovshdup	%xmm5, %xmm7
	vaddps	%xmm7, %xmm5, %xmm7
	vextractf64x4	$1, %zmm20, %ymm5
	vaddps	%zmm5, %zmm20, %zmm5
	vextractf128	$1, %ymm5, %xmm8
	vaddps	%xmm5, %xmm8, %xmm5
	vshufpd	$1, %xmm5, %xmm5, %xmm8
	vaddps	%xmm5, %xmm8, %xmm5
	vmovshdup	%xmm5, %xmm8
	vaddss	%xmm5, %xmm8, %xmm5
	vextractf64x4	$1, %zmm3, %ymm8
	vaddps	%zmm8, %zmm3, %zmm3
	vextractf128	$1, %ymm3, %xmm8
	vaddps	%xmm3, %xmm8, %xmm3
	vshufpd	$1, %xmm3, %xmm3, %xmm8
	vaddps	%xmm3, %xmm8, %xmm3
	vmovshdup	%xmm3, %xmm8
	vaddss	%xmm3, %xmm8, %xmm3
	vmovaps	%xmm24, %xmm8
	vmovss	%xmm18, %xmm8, %xmm8 {%k1}
	vucomiss	%xmm0, %xmm8
	seta	%r11b
	kmovd	%r11d, %k1
	vmovss	%xmm8, %xmm9, %xmm9 {%k1}
	vminss	%xmm8, %xmm0, %xmm8
	vminss	%xmm9, %xmm2, %xmm9
	vucomiss	%xmm2, %xmm8
	seta	%bl
	kmovd	%ebx, %k1
	movl	$2, %ebx
	vmovss	%xmm8, %xmm9, %xmm9 {%k1}
	vminss	%xmm8, %xmm2, %xmm8
	cmovaq	%rbx, %r11
	vmovlhps	%xmm2, %xmm6, %xmm2
	vminss	%xmm9, %xmm6, %xmm9
	vucomiss	%xmm6, %xmm8
	seta	%bl
	kmovd	%ebx, %k1
	movl	$3, %ebx
	vmovss	%xmm8, %xmm9, %xmm9 {%k1}
	vminss	%xmm8, %xmm6, %xmm8
	cmovaq	%rbx, %r11
	vminss	%xmm9, %xmm1, %xmm6
	vmovaps	-112(%rsp), %xmm9
	vucomiss	%xmm1, %xmm8
	seta	%bl
	kmovd	%ebx, %k1
	movl	$4, %ebx
	vmovss	%xmm8, %xmm6, %xmm6 {%k1}
	vminss	%xmm8, %xmm1, %xmm8
	cmovaq	%rbx, %r11
	vunpcklps	%xmm4, %xmm1, %xmm1
	vminss	%xmm6, %xmm4, %xmm6
	vucomiss	%xmm4, %xmm8
	seta	%bl
	kmovd	%ebx, %k1
	movl	$5, %ebx
	vmovss	%xmm8, %xmm6, %xmm6 {%k1}
	vminss	%xmm8, %xmm4, %xmm8
	cmovaq	%rbx, %r11
	vunpcklps	%xmm0, %xmm18, %xmm0
	vminss	%xmm6, %xmm19, %xmm6
	vucomiss	%xmm19, %xmm8
	seta	%bl
	kmovd	%ebx, %k1
	movl	$6, %ebx
	vmovss	%xmm8, %xmm6, %xmm6 {%k1}
	vminss	%xmm8, %xmm19, %xmm8
	cmovaq	%rbx, %r11
	vshufps	$36, %xmm2, %xmm0, %xmm0
	vmovaps	%xmm7, %xmm2
	vpermt2ps	%xmm19, %xmm9, %xmm2
	vinsertf128	$1, %xmm1, %ymm0, %ymm1
	vucomiss	%xmm7, %xmm8
	vinsertf128	$1, %xmm2, %ymm0, %ymm2
	vblendps	$192, %ymm2, %ymm1, %ymm1
	vminss	%xmm8, %xmm7, %xmm2
	seta	%bl
	cmovaq	%r12, %r11
	vblendps	$15, %ymm0, %ymm1, %ymm0
	vminss	%xmm6, %xmm7, %xmm1
	kmovd	%ebx, %k1
	vmovd	%xmm5, %ebx
	andl	$2147483647, %ebx
	vmovss	%xmm8, %xmm1, %xmm1 {%k1}
	cmpl	$2139095040, %ebx
	vminss	%xmm1, %xmm5, %xmm1
	setl	%bl
	vucomiss	%xmm5, %xmm2
	seta	%r14b
	cmovaq	%r13, %r11
	kmovd	%r14d, %k1
	vmovd	%xmm3, %r14d
	vmovss	%xmm2, %xmm1, %xmm1 {%k1}
	andl	$2147483647, %r14d
	vminss	%xmm2, %xmm5, %xmm2
	cmpl	$2139095040, %r14d
	vminss	%xmm1, %xmm3, %xmm1
	setl	%r14b
	vucomiss	%xmm3, %xmm2
	seta	%r15b
	cmovaq	%rbp, %r11
	kmovd	%r15d, %k1
	vmovss	%xmm2, %xmm1, %xmm1 {%k1}
	vandps	-64(%rsp), %ymm0, %ymm0
	vminss	%xmm2, %xmm3, %xmm2
	vpcmpltd	-96(%rsp), %ymm0, %k0
	vmulss	-116(%rsp), %xmm1, %xmm0
	vmulss	-124(%rsp), %xmm2, %xmm1
	vaddss	-120(%rsp), %xmm0, %xmm0
	vaddss	-128(%rsp), %xmm1, %xmm1
	kortestb	%k0, %k0
	jae	.LBB0_6
	testb	%bl, %bl
	je	.LBB0_6
	testb	%r14b, %r14b
	je	.LBB0_6
	vucomiss	%xmm1, %xmm0
	ja	.LBB0_9
.LBB0_6:
	movabsq	$.LCPI0_8, %r11
	vmovaps	%zmm14, %zmm17
	vmovaps	%zmm13, %zmm16
	vmovaps	%zmm12, %zmm15
	vmovaps	%zmm11, %zmm14
	vmovaps	%zmm10, %zmm13
	vbroadcastsd	(%r11), %zmm7
	movabsq	$.LCPI0_9, %r11
	vmovapd	(%r11), %zmm6
	movq	$-256, %r11
	vmovapd	%zmm6, %zmm19
	vmovapd	%zmm7, %zmm18
	vmovapd	%zmm6, %zmm20
	vmovapd	%zmm7, %zmm21
	vmovapd	%zmm6, %zmm22
	vmovapd	%zmm7, %zmm25
	vmovapd	%zmm6, %zmm26
	vmovapd	%zmm7, %zmm27
	vmovapd	%zmm6, %zmm28
	vmovapd	%zmm7, %zmm29
	vmovapd	%zmm6, %zmm30
	vmovapd	%zmm7, %zmm31
	vmovapd	%zmm6, %zmm0
	vmovapd	%zmm7, %zmm1
	vmovapd	%zmm6, %zmm2
	vmovapd	%zmm7, %zmm3
	vmovapd	%zmm6, %zmm4
	vmovapd	%zmm7, %zmm5
	.p2align	4
.LBB0_7:
	vmovups	224(%r9,%r11), %ymm8
	vmovups	256(%r9,%r11), %ymm9
	vsubps	256(%rsi,%r11), %ymm8, %ymm10
	vsubps	288(%rsi,%r11), %ymm9, %ymm11
	vsubps	800(%rsi,%r11), %ymm9, %ymm12
	vmulps	%ymm10, %ymm10, %ymm10
	vmulps	%ymm11, %ymm11, %ymm11
	vmulps	%ymm12, %ymm12, %ymm12
	vcvtps2pd	%ymm10, %zmm10
	vcvtps2pd	%ymm12, %zmm12
	vaddpd	%zmm10, %zmm4, %zmm4
	vcvtps2pd	%ymm11, %zmm10
	vsubps	544(%rsi,%r11), %ymm9, %ymm11
	vaddpd	%zmm12, %zmm1, %zmm1
	vsubps	1568(%rsi,%r11), %ymm9, %ymm12
	vaddpd	%zmm10, %zmm5, %zmm5
	vsubps	512(%rsi,%r11), %ymm8, %ymm10
	vmulps	%ymm11, %ymm11, %ymm11
	vmulps	%ymm12, %ymm12, %ymm12
	vcvtps2pd	%ymm12, %zmm12
	vmulps	%ymm10, %ymm10, %ymm10
	vcvtps2pd	%ymm10, %zmm10
	vaddpd	%zmm12, %zmm27, %zmm27
	vsubps	2336(%rsi,%r11), %ymm9, %ymm12
	vaddpd	%zmm10, %zmm2, %zmm2
	vcvtps2pd	%ymm11, %zmm10
	vsubps	768(%rsi,%r11), %ymm8, %ymm11
	vmulps	%ymm12, %ymm12, %ymm12
	vaddpd	%zmm10, %zmm3, %zmm3
	vsubps	1024(%rsi,%r11), %ymm8, %ymm10
	vcvtps2pd	%ymm12, %zmm12
	vmulps	%ymm11, %ymm11, %ymm11
	vcvtps2pd	%ymm11, %zmm11
	vaddpd	%zmm12, %zmm18, %zmm18
	vmulps	%ymm10, %ymm10, %ymm10
	vaddpd	%zmm11, %zmm0, %zmm0
	vsubps	1056(%rsi,%r11), %ymm9, %ymm11
	vcvtps2pd	%ymm10, %zmm10
	vaddpd	%zmm10, %zmm30, %zmm30
	vmulps	%ymm11, %ymm11, %ymm11
	vcvtps2pd	%ymm11, %zmm10
	vsubps	1312(%rsi,%r11), %ymm9, %ymm11
	vaddpd	%zmm10, %zmm31, %zmm31
	vsubps	1280(%rsi,%r11), %ymm8, %ymm10
	vmulps	%ymm11, %ymm11, %ymm11
	vmulps	%ymm10, %ymm10, %ymm10
	vcvtps2pd	%ymm10, %zmm10
	vaddpd	%zmm10, %zmm28, %zmm28
	vcvtps2pd	%ymm11, %zmm10
	vsubps	1536(%rsi,%r11), %ymm8, %ymm11
	vaddpd	%zmm10, %zmm29, %zmm29
	vsubps	1792(%rsi,%r11), %ymm8, %ymm10
	vmulps	%ymm11, %ymm11, %ymm11
	vcvtps2pd	%ymm11, %zmm11
	vmulps	%ymm10, %ymm10, %ymm10
	vaddpd	%zmm11, %zmm26, %zmm26
	vsubps	1824(%rsi,%r11), %ymm9, %ymm11
	vcvtps2pd	%ymm10, %zmm10
	vaddpd	%zmm10, %zmm22, %zmm22
	vmulps	%ymm11, %ymm11, %ymm11
	vcvtps2pd	%ymm11, %zmm10
	vsubps	2080(%rsi,%r11), %ymm9, %ymm11
	vsubps	2592(%rsi,%r11), %ymm9, %ymm9
	vaddpd	%zmm10, %zmm25, %zmm25
	vsubps	2048(%rsi,%r11), %ymm8, %ymm10
	vmulps	%ymm11, %ymm11, %ymm11
	vmulps	%ymm9, %ymm9, %ymm9
	vcvtps2pd	%ymm9, %zmm9
	vmulps	%ymm10, %ymm10, %ymm10
	vcvtps2pd	%ymm10, %zmm10
	vaddpd	%zmm9, %zmm7, %zmm7
	vaddpd	%zmm10, %zmm20, %zmm20
	vcvtps2pd	%ymm11, %zmm10
	vsubps	2304(%rsi,%r11), %ymm8, %ymm11
	vsubps	2560(%rsi,%r11), %ymm8, %ymm8
	addq	$64, %r11
	vaddpd	%zmm10, %zmm21, %zmm21
	vmulps	%ymm11, %ymm11, %ymm11
	vmulps	%ymm8, %ymm8, %ymm8
	vcvtps2pd	%ymm11, %zmm11
	vcvtps2pd	%ymm8, %zmm8
	vaddpd	%zmm11, %zmm19, %zmm19
	vaddpd	%zmm8, %zmm6, %zmm6
	jne	.LBB0_7
	jmp	.LBB0_8
.LBB0_10:
	addq	$2216, %rsp
	popq	%rbx
	popq	%r12
	popq	%r13
	popq	%r14
	popq	%r15
	popq	%rbp
.LBB0_11:
	vzeroupper
	retq
.Lfunc_end0:
	.size	kiln_kernel_host, .Lfunc_end0-kiln_kernel_host

	.section	".note.GNU-stack","",@progbits
