use assignor_sdk::assignor;

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub struct Strategy {
    pub partitions: u32,
}

fn main() {}
