//! Counter-based random bits: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random
//! numbers: as easy as 1, 2, 3", SC 2011), the generator of cuRAND's
//! `CURAND_RNG_PSEUDO_PHILOX4_32_10`, of torch's CUDA draws and of C++26's `std::philox4x32`.
//! A draw is a pure function of (counter, key), so the same element has the same bits on
//! every backend and in every kernel that computes it.

use super::value::Value;
use crate::dtype::DType;

/// The round multipliers and the key's increments (Weyl constants) of Philox4x32.
pub const PHILOX_M: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
pub const PHILOX_W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox4x32 with 10 rounds of counter `ctr` under key `key`.
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(PHILOX_W[0]), k[1].wrapping_add(PHILOX_W[1])];
        }
        let p0 = u64::from(PHILOX_M[0]) * u64::from(c[0]);
        let p1 = u64::from(PHILOX_M[1]) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// The `philox` op: the first two words of Philox4x32-10 of counter `(lo(x), hi(x), 0, 0)`
/// under key `(lo(y), hi(y))`, as `w1 · 2^32 + w0`, wrapped to `dt`.
pub fn philox(dt: DType, x: Value, y: Value) -> Value {
    pair(dt, x, y, 0)
}

/// The `philox_high` op: the last two words of the same call, `w3 · 2^32 + w2`.
pub fn philox_high(dt: DType, x: Value, y: Value) -> Value {
    pair(dt, x, y, 2)
}

/// Words `first` and `first + 1` of Philox4x32-10 of `x` under `y`, as one value of `dt`.
fn pair(dt: DType, x: Value, y: Value, first: usize) -> Value {
    let (Value::UInt(x), Value::UInt(y)) = (x, y) else {
        unreachable!("philox of {x:?} and {y:?}: the dtype rules admit unsigned integers only")
    };
    let w = philox4x32_10([x as u32, (x >> 32) as u32, 0, 0], [y as u32, (y >> 32) as u32]);
    let bits = u64::from(w[first + 1]) << 32 | u64::from(w[first]);
    let width = dt.itemsize() * 8;
    Value::UInt(if width >= 64 { bits } else { bits & ((1u64 << width) - 1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known answers (`tests/kat_vectors`, the three `philox4x32 10` lines).
    #[test]
    fn philox_matches_random123s_known_answers() {
        let cases: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            ([0; 4], [0; 2], [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]),
            (
                [0xffff_ffff; 4],
                [0xffff_ffff; 2],
                [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
            ),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (ctr, key, want) in cases {
            assert_eq!(philox4x32_10(ctr, key), want, "ctr {ctr:x?} key {key:x?}");
        }
    }

    #[test]
    fn the_op_packs_the_first_two_words() {
        let Value::UInt(b) = philox(DType::UInt64, Value::UInt(0), Value::UInt(0)) else {
            unreachable!()
        };
        assert_eq!(b, 0xe169_c58d_6627_e8d5);
        let Value::UInt(c) = philox(DType::UInt32, Value::UInt(0), Value::UInt(0)) else {
            unreachable!()
        };
        assert_eq!(c, 0x6627_e8d5);
        let Value::UInt(h) = philox_high(DType::UInt64, Value::UInt(0), Value::UInt(0)) else {
            unreachable!()
        };
        assert_eq!(h, 0x9b00_dbd8_bc57_ac4c);
    }
}
