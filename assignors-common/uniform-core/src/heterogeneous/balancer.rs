//! Kafka's `UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer`: picks, for one
//! topic at a time, the subscriber to give the next partition to and the one to take it from,
//! without a priority queue.
//!
//! The subscribers are sorted once per topic by load (then position). Two ranges of that list
//! are kept: the least loaded members, which grow rightwards as each round of them gets a
//! partition, and the most loaded, which grow leftwards as each round gives one up:
//!
//! ```text
//!                         most
//!                         loaded
//!           ^ least       range
//!           | loaded               #
//!           | range      [##<-   ]##
//! partition |          ##[#######]##
//! count     | [...->  ]##[#######]##
//!           | [#######]##[#######]##
//!           +----------------------->
//!             members             ^^ members with nothing of the topic to give up
//! ```
//!
//! Loads are read from the builder's `sizes` on every call: the builder changes them as it
//! moves partitions, exactly as Kafka's inner class reads the outer array.

/// The balancer's state; see the module docs.
#[derive(Debug)]
pub(super) struct MemberAssignmentBalancer {
    /// The members to balance, sorted by load, then position.
    sorted_members: Vec<u32>,
    /// `[0, least_loaded_range_end)` is the least loaded range.
    least_loaded_range_end: usize,
    /// The load of each member of the least loaded range before it got a partition this round.
    least_loaded_range_partition_count: i64,
    /// Index in `sorted_members` of the next member to give a partition to.
    next_least_loaded_member: usize,
    /// `[most_loaded_range_start, most_loaded_range_end)` is the most loaded range; the end
    /// moves left as members with nothing to give are excluded.
    most_loaded_range_start: usize,
    most_loaded_range_end: usize,
    /// The load of each member of the most loaded range before it gave a partition this round.
    most_loaded_range_partition_count: i64,
    /// Index in `sorted_members` of the next member to take a partition from (-1: none).
    next_most_loaded_member: isize,
}

impl MemberAssignmentBalancer {
    pub(super) fn new(members: usize) -> Self {
        MemberAssignmentBalancer {
            sorted_members: Vec::with_capacity(members),
            least_loaded_range_end: 0,
            least_loaded_range_partition_count: -1,
            next_least_loaded_member: 0,
            most_loaded_range_start: 0,
            most_loaded_range_end: 0,
            most_loaded_range_partition_count: 1,
            next_most_loaded_member: -1,
        }
    }

    /// Resets the balancer for `members` (not empty) and returns the difference in load
    /// between the most and the least loaded of them.
    pub(super) fn initialize(&mut self, members: &[u32], sizes: &[i64]) -> i64 {
        debug_assert!(
            !members.is_empty(),
            "cannot balance an empty subscriber list"
        );
        self.sorted_members.clear();
        self.sorted_members.extend_from_slice(members);
        self.sorted_members
            .sort_unstable_by_key(|&m| (sizes[m as usize], m));
        let first = sizes[self.sorted_members[0] as usize];
        let last = sizes[self.sorted_members[self.sorted_members.len() - 1] as usize];
        let len = self.sorted_members.len();

        self.least_loaded_range_end = 0;
        self.least_loaded_range_partition_count = first - 1;
        self.next_least_loaded_member = 0;

        self.most_loaded_range_start = len;
        self.most_loaded_range_end = len;
        self.most_loaded_range_partition_count = last + 1;
        self.next_most_loaded_member = len as isize - 1;

        last - first
    }

    /// The member to give the next partition to; assumes it gets one.
    pub(super) fn next_least_loaded_member(&mut self, sizes: &[i64]) -> u32 {
        if self.next_least_loaded_member >= self.least_loaded_range_end {
            // Everyone in the range got one this round: raise its level and widen it.
            self.least_loaded_range_partition_count += 1;
            while self.least_loaded_range_end < self.sorted_members.len()
                && sizes[self.sorted_members[self.least_loaded_range_end] as usize]
                    == self.least_loaded_range_partition_count
            {
                self.least_loaded_range_end += 1;
            }
            self.next_least_loaded_member = 0;
        }
        let m = self.sorted_members[self.next_least_loaded_member];
        self.next_least_loaded_member += 1;
        m
    }

    /// The member to take the next partition from, or `None` when no member is left; assumes
    /// it gives one up.
    pub(super) fn next_most_loaded_member(&mut self, sizes: &[i64]) -> Option<u32> {
        if self.next_most_loaded_member < self.most_loaded_range_start as isize {
            if self.most_loaded_range_end <= self.most_loaded_range_start
                && self.most_loaded_range_start > 0
            {
                // The range was emptied by exclusions: restart it at the next member down, so
                // it always widens below.
                self.most_loaded_range_partition_count =
                    sizes[self.sorted_members[self.most_loaded_range_start - 1] as usize];
            } else {
                self.most_loaded_range_partition_count -= 1;
            }
            while self.most_loaded_range_start > 0
                && sizes[self.sorted_members[self.most_loaded_range_start - 1] as usize]
                    == self.most_loaded_range_partition_count
            {
                self.most_loaded_range_start -= 1;
            }
            self.next_most_loaded_member = self.most_loaded_range_end as isize - 1;
        }
        if self.next_most_loaded_member < 0 {
            return None;
        }
        let m = self.sorted_members[self.next_most_loaded_member as usize];
        self.next_most_loaded_member -= 1;
        Some(m)
    }

    /// Drops the member last returned by [`Self::next_most_loaded_member`] from the most
    /// loaded range (it has nothing of the topic to give), by swapping it to the range's end
    /// and shrinking the range.
    pub(super) fn exclude_most_loaded_member(&mut self) {
        let index = (self.next_most_loaded_member + 1) as usize;
        self.sorted_members
            .swap(index, self.most_loaded_range_end - 1);
        self.most_loaded_range_end -= 1;
    }

    /// Whether the two ranges' loads differ by one or less: moving a partition from one to
    /// the other would not improve the balance.
    pub(super) fn is_balanced(&self) -> bool {
        self.most_loaded_range_partition_count - self.least_loaded_range_partition_count <= 1
    }
}
