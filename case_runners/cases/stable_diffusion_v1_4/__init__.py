"""stable_diffusion_v1_4: FlagPerf's text-to-image inference case (an inference case only: no training part)."""
