"""The recorded history every later stage reads: requests and their normalized view, launches, the rules that classify them."""
