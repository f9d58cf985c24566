//! [`Addresses`]: the open connections of each client address, shared by every listener of
//! the host, so one address cannot hold more than `kafka.max_connections_per_address`. Its
//! own file, imported by the listener and by [`super::Broker`], so neither imports the other
//! in a circle.

use std::sync::Arc;

/// Open connections by client address, shared by every listener of the host.
#[derive(Debug, Default)]
pub struct Addresses {
    open: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

impl Addresses {
    /// Counts one more connection from `ip`, unless it has `max` open already. The count
    /// goes down when the guard is dropped.
    pub fn admit(self: &Arc<Self>, ip: std::net::IpAddr, max: usize) -> Option<AddressGuard> {
        let mut open = self.open.lock().unwrap();
        let count = open.entry(ip).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(AddressGuard {
            addresses: self.clone(),
            ip,
        })
    }
}

/// One admitted connection of an address.
pub struct AddressGuard {
    addresses: Arc<Addresses>,
    ip: std::net::IpAddr,
}

impl Drop for AddressGuard {
    fn drop(&mut self) {
        let mut open = self.addresses.open.lock().unwrap();
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_admitted_up_to_its_cap_and_again_once_one_closes() {
        let addresses = Arc::new(Addresses::default());
        let a: std::net::IpAddr = [10, 0, 0, 1].into();
        let b: std::net::IpAddr = [10, 0, 0, 2].into();
        let first = addresses.admit(a, 2).expect("first");
        let _second = addresses.admit(a, 2).expect("second");
        assert!(
            addresses.admit(a, 2).is_none(),
            "third from the same address"
        );
        assert!(
            addresses.admit(b, 2).is_some(),
            "another address is counted apart"
        );
        drop(first);
        assert!(addresses.admit(a, 2).is_some(), "a slot freed by a close");
    }
}
