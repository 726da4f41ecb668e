//! Checks of a binary module image before the driver reads it.
//!
//! `cuModuleLoadDataEx` takes a bare pointer: it reads a cubin's ELF header, then its section and
//! program header tables and sections at the offsets the header gives, or a fatbin's header
//! and the entries it counts, or, when neither magic is there, PTX text up to a NUL. It never
//! learns how many bytes the caller has, so an empty slice (a dangling pointer), a truncated
//! ELF or an ELF whose tables point past its end made it read outside the buffer: a segfault of
//! the host process, not an error. [`check`] refuses such images with the reason, so a
//! malformed `RawModule::from_cubin` or a damaged cache entry is a typed error.

/// `\x7fELF`.
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
/// A fatbin's magic, `0xBA55ED50` little-endian.
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];
/// `e_machine` of CUDA code.
const EM_CUDA: u16 = 190;
/// Sizes of an ELF64 header, section header and program header.
const EHDR: usize = 64;
const SHDR: usize = 64;
const PHDR: usize = 56;
/// `SHT_NOBITS`: a section that takes no bytes of the file (`.bss`, `.nv.shared.*`).
const SHT_NOBITS: u32 = 8;
/// The bytes of a fatbin's header: magic, version, header size, payload size.
const FATBIN_HEADER: usize = 16;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Whether `count` entries of `size` bytes from `offset` lie within `len` bytes.
fn table_fits(offset: u64, count: u64, size: u64, len: usize) -> bool {
    count.checked_mul(size).and_then(|b| b.checked_add(offset)).is_some_and(|end| end <= len as u64)
}

/// Why `bytes` is not a cubin (a 64-bit little-endian CUDA ELF whose header tables and
/// sections lie within it) or a fatbin (whose header and payload lie within it); `Ok` when it
/// is one the driver can read without going past its end.
pub(crate) fn check(bytes: &[u8]) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("the image is empty".into());
    }
    if bytes.starts_with(&FATBIN_MAGIC) {
        return check_fatbin(bytes);
    }
    if bytes.starts_with(&ELF_MAGIC) {
        return check_elf(bytes);
    }
    Err(format!(
        "{} bytes that are neither a cubin (ELF) nor a fatbin (no magic number); PTX is loaded as text",
        bytes.len()
    ))
}

fn check_fatbin(b: &[u8]) -> Result<(), String> {
    if b.len() < FATBIN_HEADER {
        return Err(format!("a fatbin of {} bytes, shorter than its 16-byte header", b.len()));
    }
    let header = u16_at(b, 6) as u64;
    let payload = u64_at(b, 8);
    if header < FATBIN_HEADER as u64 || payload == 0 {
        return Err(format!("a fatbin header of {header} bytes with a payload of {payload}"));
    }
    if !table_fits(header, 1, payload, b.len()) {
        return Err(format!(
            "a fatbin of {} bytes whose header says {} (truncated)",
            b.len(),
            header.saturating_add(payload)
        ));
    }
    Ok(())
}

fn check_elf(b: &[u8]) -> Result<(), String> {
    if b.len() < EHDR {
        return Err(format!("an ELF of {} bytes, shorter than its 64-byte header", b.len()));
    }
    if b[4] != 2 || b[5] != 1 {
        return Err(format!(
            "an ELF of class {} and byte order {}: a cubin is 64-bit little-endian",
            b[4], b[5]
        ));
    }
    let machine = u16_at(b, 18);
    if machine != EM_CUDA {
        return Err(format!("an ELF for machine {machine}, not CUDA ({EM_CUDA})"));
    }
    let (phoff, shoff) = (u64_at(b, 32), u64_at(b, 40));
    let (phentsize, phnum) = (u16_at(b, 54) as u64, u16_at(b, 56) as u64);
    let (shentsize, shnum, shstrndx) = (u16_at(b, 58) as u64, u16_at(b, 60) as u64, u16_at(b, 62));
    if phnum > 0 && (phentsize < PHDR as u64 || !table_fits(phoff, phnum, phentsize, b.len())) {
        return Err(format!(
            "an ELF of {} bytes whose {phnum} program headers of {phentsize} bytes at {phoff} do not fit",
            b.len()
        ));
    }
    if shnum == 0 {
        return Err("an ELF without sections".into());
    }
    if shentsize < SHDR as u64 || !table_fits(shoff, shnum, shentsize, b.len()) {
        return Err(format!(
            "an ELF of {} bytes whose {shnum} section headers of {shentsize} bytes at {shoff} do not fit",
            b.len()
        ));
    }
    if shstrndx as u64 >= shnum {
        return Err(format!(
            "an ELF whose section-name table {shstrndx} is not among its {shnum} sections"
        ));
    }
    for k in 0..shnum {
        let at = (shoff + k * shentsize) as usize;
        let (kind, offset, size) = (u32_at(b, at + 4), u64_at(b, at + 24), u64_at(b, at + 32));
        if kind != SHT_NOBITS && !table_fits(offset, 1, size, b.len()) {
            return Err(format!(
                "an ELF of {} bytes whose section {k} ({size} bytes at {offset}) goes past its end",
                b.len()
            ));
        }
    }
    for k in 0..phnum {
        let at = (phoff + k * phentsize) as usize;
        let (offset, size) = (u64_at(b, at + 8), u64_at(b, at + 32));
        if !table_fits(offset, 1, size, b.len()) {
            return Err(format!(
                "an ELF of {} bytes whose segment {k} ({size} bytes at {offset}) goes past its end",
                b.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal CUDA ELF: the header, a null section, a 16-byte data section, a NOBITS section
    /// of 4 KiB and the section-name table; one program header over the data.
    fn elf() -> Vec<u8> {
        let mut b = vec![0u8; EHDR];
        b[..4].copy_from_slice(&ELF_MAGIC);
        b[4] = 2;
        b[5] = 1;
        b[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        let data = b.len() as u64;
        b.extend([7u8; 16]);
        let phoff = b.len() as u64;
        let mut ph = vec![0u8; PHDR];
        ph[8..16].copy_from_slice(&data.to_le_bytes());
        ph[32..40].copy_from_slice(&16u64.to_le_bytes());
        b.extend(ph);
        let shoff = b.len() as u64;
        let section = |kind: u32, offset: u64, size: u64| {
            let mut s = vec![0u8; SHDR];
            s[4..8].copy_from_slice(&kind.to_le_bytes());
            s[24..32].copy_from_slice(&offset.to_le_bytes());
            s[32..40].copy_from_slice(&size.to_le_bytes());
            s
        };
        b.extend(section(0, 0, 0));
        b.extend(section(1, data, 16));
        b.extend(section(SHT_NOBITS, 0, 4096));
        b.extend(section(3, data, 1));
        b[32..40].copy_from_slice(&phoff.to_le_bytes());
        b[40..48].copy_from_slice(&shoff.to_le_bytes());
        b[54..56].copy_from_slice(&(PHDR as u16).to_le_bytes());
        b[56..58].copy_from_slice(&1u16.to_le_bytes());
        b[58..60].copy_from_slice(&(SHDR as u16).to_le_bytes());
        b[60..62].copy_from_slice(&4u16.to_le_bytes());
        b[62..64].copy_from_slice(&3u16.to_le_bytes());
        b
    }

    #[test]
    fn a_well_formed_cubin_passes() {
        assert_eq!(check(&elf()), Ok(()));
    }

    #[test]
    fn what_the_driver_would_read_past_is_refused() {
        // The cases of the bad-input walk that took the process down.
        assert!(check(&[]).unwrap_err().contains("empty"));
        assert!(check(b"\x7fELFgarbage").unwrap_err().contains("shorter than its 64-byte header"));
        assert!(check(b"garbage").unwrap_err().contains("neither a cubin"));
        let good = elf();
        // Truncated: the section headers are at the end.
        let e = check(&good[..good.len() - 1]).unwrap_err();
        assert!(e.contains("section headers"), "{e}");
        // A section past the end.
        let mut b = good.clone();
        let shoff = u64_at(&b, 40) as usize;
        b[shoff + SHDR + 32..shoff + SHDR + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("section 1"), "{:?}", check(&b));
        // Section headers at an offset that overflows.
        let mut b = good.clone();
        b[40..48].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
        assert!(check(&b).is_err());
        // A segment past the end.
        let mut b = good.clone();
        let phoff = u64_at(&b, 32) as usize;
        b[phoff + 32..phoff + 40].copy_from_slice(&1_000_000u64.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("segment 0"));
        // Another machine, another class, no sections, a bad name table.
        let mut b = good.clone();
        b[18..20].copy_from_slice(&62u16.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("machine 62"));
        let mut b = good.clone();
        b[4] = 1;
        assert!(check(&b).unwrap_err().contains("64-bit"));
        let mut b = good.clone();
        b[60..62].copy_from_slice(&0u16.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("without sections"));
        let mut b = good;
        b[62..64].copy_from_slice(&9u16.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("section-name table"));
    }

    #[test]
    fn fatbins_must_hold_their_payload() {
        let mut f = FATBIN_MAGIC.to_vec();
        f.extend(1u16.to_le_bytes());
        f.extend(16u16.to_le_bytes());
        f.extend(8u64.to_le_bytes());
        f.extend([0u8; 8]);
        assert_eq!(check(&f), Ok(()));
        assert!(check(&f[..20]).unwrap_err().contains("truncated"));
        assert!(check(&f[..10]).unwrap_err().contains("16-byte header"));
        let mut huge = f.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check(&huge).is_err());
    }
}
