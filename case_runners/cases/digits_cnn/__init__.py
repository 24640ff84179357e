"""digits_cnn: a small CNN on scikit-learn's 8x8 handwritten digits."""
