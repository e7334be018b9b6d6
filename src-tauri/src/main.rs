fn main(){ nightshift_app::run() }
