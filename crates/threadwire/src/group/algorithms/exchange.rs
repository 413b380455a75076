//! Everyone to everyone: allgather(v), alltoall(v).

use crate::group::element::Element;
use crate::group::schedule::Call;
use crate::group::CollError;

/// Bruck's allgather: in round k, send the first min(2^k, p − 2^k) blocks
/// held to r − 2^k and append as many from r + 2^k; then rotate.
pub(crate) async fn allgather_bruck<T: Element>(
    c: &Call,
    data: &[T],
) -> Result<Vec<T>, CollError> {
    let (p, r, n) = (c.size(), c.rank(), data.len());
    let mut held = data.to_vec();
    let mut k = 1;
    while k < p {
        let blocks = k.min(p - k);
        let got = c
            .sendrecv((r + p - k) % p, &held[..blocks * n], (r + k) % p, Some(blocks * n))
            .await?;
        held.extend_from_slice(&got);
        k <<= 1;
    }
    // held[i] is the block of rank r + i.
    let mut out = Vec::with_capacity(p * n);
    for rank in 0..p {
        let i = (rank + p - r) % p;
        out.extend_from_slice(&held[i * n..(i + 1) * n]);
    }
    Ok(out)
}

/// Ring allgather: p − 1 steps, each passing the block last received on
/// to the right.
pub(crate) async fn allgather_ring<T: Element>(
    c: &Call,
    data: &[T],
) -> Result<Vec<T>, CollError> {
    let (p, r, n) = (c.size(), c.rank(), data.len());
    let mut out = data.repeat(p);
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);
    for step in 0..p - 1 {
        let (give, take) = ((r + p - step) % p, (r + 2 * p - step - 1) % p);
        let got = c.sendrecv(right, &out[give * n..(give + 1) * n], left, Some(n)).await?;
        out[take * n..(take + 1) * n].copy_from_slice(&got);
    }
    Ok(out)
}

/// Ring allgather of blocks of any length.
pub(crate) async fn allgatherv_ring<T: Element>(
    c: &Call,
    data: &[T],
) -> Result<Vec<Vec<T>>, CollError> {
    let (p, r) = (c.size(), c.rank());
    let mut out = vec![Vec::new(); p];
    out[r] = data.to_vec();
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);
    for step in 0..p - 1 {
        let (give, take) = ((r + p - step) % p, (r + 2 * p - step - 1) % p);
        out[take] = c.sendrecv(right, &out[give], left, None).await?.into_vec();
    }
    Ok(out)
}

/// Bruck's alltoall: rotate the blocks, then in round k forward every
/// block whose index has bit k set to r + 2^k; then rotate back.
pub(crate) async fn alltoall_bruck<T: Element>(
    c: &Call,
    data: &[T],
    n: usize,
) -> Result<Vec<T>, CollError> {
    let (p, r) = (c.size(), c.rank());
    // tmp[i]: the block for rank r + i.
    let mut tmp: Vec<Vec<T>> = (0..p)
        .map(|i| {
            let to = (r + i) % p;
            data[to * n..(to + 1) * n].to_vec()
        })
        .collect();
    let mut k = 1;
    while k < p {
        let moving: Vec<usize> = (0..p).filter(|i| i & k != 0).collect();
        let packed: Vec<T> = moving.iter().flat_map(|&i| tmp[i].iter().copied()).collect();
        let got = c
            .sendrecv::<T>((r + k) % p, &packed, (r + p - k) % p, Some(moving.len() * n))
            .await?;
        for (j, &i) in moving.iter().enumerate() {
            tmp[i].copy_from_slice(&got[j * n..(j + 1) * n]);
        }
        k <<= 1;
    }
    // tmp[i] now came from rank r − i.
    let mut blocks: Vec<Option<Vec<T>>> = vec![None; p];
    for (i, b) in tmp.into_iter().enumerate() {
        blocks[(r + p - i) % p] = Some(b);
    }
    Ok(blocks.into_iter().flatten().flatten().collect())
}

/// Pairwise exchange: in step s, send to r + s the block for it and
/// receive from r − s the block for this member.
pub(crate) async fn alltoall_pairwise<T: Element>(
    c: &Call,
    data: &[T],
    n: usize,
) -> Result<Vec<T>, CollError> {
    let (p, r) = (c.size(), c.rank());
    // Our own block is in place already; the others are overwritten.
    let mut out = data.to_vec();
    for s in 1..p {
        let (to, from) = ((r + s) % p, (r + p - s) % p);
        let got = c.sendrecv(to, &data[to * n..(to + 1) * n], from, Some(n)).await?;
        out[from * n..(from + 1) * n].copy_from_slice(&got);
    }
    Ok(out)
}

/// Pairwise exchange of blocks of any length: `counts[i]` elements of
/// `data` go to member i.
pub(crate) async fn alltoallv_pairwise<T: Element>(
    c: &Call,
    data: &[T],
    counts: &[usize],
) -> Result<Vec<Vec<T>>, CollError> {
    let (p, r) = (c.size(), c.rank());
    let total: usize = counts.iter().sum();
    if counts.len() != p || total != data.len() {
        return Err(CollError::LengthMismatch {
            rank: r,
            expected: if counts.len() != p { p } else { total },
            found: if counts.len() != p {
                counts.len()
            } else {
                data.len()
            },
        });
    }
    let mut starts = Vec::with_capacity(p);
    let mut at = 0;
    for &k in counts {
        starts.push(at);
        at += k;
    }
    let part = |i: usize| &data[starts[i]..starts[i] + counts[i]];
    let mut out = vec![Vec::new(); p];
    out[r] = part(r).to_vec();
    for s in 1..p {
        let (to, from) = ((r + s) % p, (r + p - s) % p);
        out[from] = c.sendrecv(to, part(to), from, None).await?.into_vec();
    }
    Ok(out)
}
