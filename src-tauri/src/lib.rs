pub fn run(){}
