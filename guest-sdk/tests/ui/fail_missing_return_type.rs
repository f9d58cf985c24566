use assignor_sdk::{assignor, AssignRequest};

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub fn assign(request: &AssignRequest) {
    let _ = request;
}

fn main() {}
