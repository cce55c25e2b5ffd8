//! An append-only list whose snapshots are cheap and never see later pushes.
//!
//! Elements live in immutable shared chunks whose sizes are the binary digits of the length
//! (strictly decreasing powers of two). A push adds a one-element chunk and merges equal-sized
//! neighbours, like a binary counter: amortized O(log n) element copies per push. A snapshot
//! clones at most 64 chunk handles, so handing one to a reader costs O(log n) regardless of how
//! much history there is, and the reader's view can never change under it.

use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct FrozenList<T> {
    chunks: Vec<Arc<[T]>>,
    len: usize,
}

impl<T> Clone for FrozenList<T> {
    fn clone(&self) -> Self {
        Self {
            chunks: self.chunks.clone(),
            len: self.len,
        }
    }
}

impl<T> Default for FrozenList<T> {
    fn default() -> Self {
        Self {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Clone> FrozenList<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, item: T) {
        self.chunks.push(Arc::from(vec![item]));
        self.len += 1;
        while let [.., a, b] = self.chunks.as_slice() {
            if a.len() != b.len() {
                break;
            }
            let merged: Arc<[T]> = a.iter().chain(b.iter()).cloned().collect();
            self.chunks.truncate(self.chunks.len() - 2);
            self.chunks.push(merged);
        }
    }

    /// Keeps the first `len` elements. Returns how many elements had to be pushed again (the kept
    /// part of the chunk the cut falls in), so callers can account for the work.
    pub(crate) fn truncate(&mut self, len: usize) -> usize {
        if len >= self.len {
            return 0;
        }
        let mut start = self.len;
        while let Some(last) = self.chunks.last() {
            start -= last.len();
            if start < len {
                break;
            }
            self.chunks.pop();
            if start == len {
                self.len = len;
                return 0;
            }
        }
        // The cut falls inside the last remaining chunk: re-push its kept prefix.
        let Some(straddling) = self.chunks.pop() else {
            self.len = 0;
            return 0;
        };
        self.len = start;
        let keep = len - start;
        for item in straddling.iter().take(keep) {
            self.push(item.clone());
        }
        keep
    }

    pub(crate) fn get(&self, mut index: usize) -> Option<&T> {
        for chunk in &self.chunks {
            if index < chunk.len() {
                return chunk.get(index);
            }
            index -= chunk.len();
        }
        None
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// Elements from `index` on, skipping whole chunks (O(log n) to reach the start).
    pub(crate) fn iter_from(&self, mut index: usize) -> impl Iterator<Item = &T> + '_ {
        let mut first = self.chunks.len();
        for (i, chunk) in self.chunks.iter().enumerate() {
            if index < chunk.len() {
                first = i;
                break;
            }
            index -= chunk.len();
        }
        let rest = self.chunks.get(first..).unwrap_or(&[]);
        rest.iter()
            .enumerate()
            .flat_map(move |(i, c)| c.iter().skip(if i == 0 { index } else { 0 }))
    }

    #[cfg(test)]
    fn chunk_sizes(&self) -> Vec<usize> {
        self.chunks.iter().map(|c| c.len()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_are_the_binary_digits_of_the_length() {
        let mut l = FrozenList::default();
        for i in 0..13 {
            l.push(i);
        }
        assert_eq!(l.chunk_sizes(), [8, 4, 1]);
        assert_eq!(
            l.iter().copied().collect::<Vec<_>>(),
            (0..13).collect::<Vec<_>>()
        );
        assert_eq!(l.get(12), Some(&12));
        for from in 0..=14 {
            let want: Vec<_> = (from..13).collect();
            assert_eq!(
                l.iter_from(from).copied().collect::<Vec<_>>(),
                want,
                "from {from}"
            );
        }
        assert_eq!(l.get(13), None);
    }

    #[test]
    fn snapshots_do_not_see_later_pushes_or_truncations() {
        let mut l = FrozenList::default();
        for i in 0..5 {
            l.push(i);
        }
        let snap = l.clone();
        l.push(5);
        l.truncate(2);
        assert_eq!(snap.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(l.iter().copied().collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn truncate_everywhere_keeps_prefix_and_shape() {
        for n in 0..40 {
            for cut in 0..=n + 1 {
                let mut l = FrozenList::default();
                for i in 0..n {
                    l.push(i);
                }
                l.truncate(cut);
                let want: Vec<_> = (0..n.min(cut)).collect();
                assert_eq!(
                    l.iter().copied().collect::<Vec<_>>(),
                    want,
                    "n={n} cut={cut}"
                );
                assert_eq!(l.len(), want.len());
                let sizes = l.chunk_sizes();
                assert!(sizes.windows(2).all(|w| w[0] > w[1]), "{sizes:?}");
                assert!(sizes.iter().all(|s| s.is_power_of_two()));
                l.push(99);
                assert_eq!(l.iter().last(), Some(&99));
            }
        }
    }
}
