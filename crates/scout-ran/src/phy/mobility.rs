//! Where a UE is: a position in metres (the gNB at the origin) and how it moves — static, in a
//! straight line at a speed and heading, or by random waypoints in an area (the random waypoint
//! model: a uniformly drawn destination in the area, approached at the speed, a pause, the next).
//! Sans-IO: [`Mover::advance_to`] takes the time; every draw is from the UE's own seeded stream.

use crate::rng::Rng;

/// How a UE moves.
#[derive(Clone, Debug, PartialEq)]
pub enum Mobility {
    Static,
    /// At `speed_mps` along `heading_deg` (0 = +x, counter-clockwise).
    Linear {
        speed_mps: f64,
        heading_deg: f64,
    },
    /// Random waypoints in the rectangle `area` = [x0, y0, x1, y1] at `speed_mps`, pausing
    /// `pause_s` at each.
    RandomWaypoint {
        area: [f64; 4],
        speed_mps: f64,
        pause_s: f64,
    },
}

impl Mobility {
    pub fn speed_mps(&self) -> f64 {
        match self {
            Mobility::Static => 0.0,
            Mobility::Linear { speed_mps, .. } | Mobility::RandomWaypoint { speed_mps, .. } => *speed_mps,
        }
    }
}

/// A UE's position over time.
#[derive(Clone, Debug)]
pub struct Mover {
    pos: [f64; 2],
    t_ns: i64,
    mobility: Mobility,
    /// Random waypoint: the destination, and until when the UE pauses.
    target: Option<[f64; 2]>,
    pause_until_ns: i64,
    rng: Rng,
}

impl Mover {
    pub fn new(start: [f64; 2], mobility: Mobility, rng: Rng) -> Self {
        Mover { pos: start, t_ns: 0, mobility, target: None, pause_until_ns: 0, rng }
    }

    pub fn position(&self) -> [f64; 2] {
        self.pos
    }

    pub fn mobility(&self) -> &Mobility {
        &self.mobility
    }

    /// Moves to time `t_ns` (an earlier time leaves the UE where it is); returns the distance
    /// travelled.
    pub fn advance_to(&mut self, t_ns: i64) -> f64 {
        if t_ns <= self.t_ns {
            return 0.0;
        }
        let dt = (t_ns - self.t_ns) as f64 * 1e-9;
        let from = self.t_ns;
        self.t_ns = t_ns;
        match self.mobility.clone() {
            Mobility::Static => 0.0,
            Mobility::Linear { speed_mps, heading_deg } => {
                let (s, c) = heading_deg.to_radians().sin_cos();
                let d = speed_mps * dt;
                self.pos = [self.pos[0] + d * c, self.pos[1] + d * s];
                d
            }
            Mobility::RandomWaypoint { area, speed_mps, pause_s } => {
                if speed_mps <= 0.0 {
                    return 0.0;
                }
                let (mut now, mut moved) = (from, 0.0);
                while now < t_ns {
                    if now < self.pause_until_ns {
                        now = self.pause_until_ns.min(t_ns);
                        continue;
                    }
                    let target = *self.target.get_or_insert_with(|| {
                        [
                            area[0] + (area[2] - area[0]) * self.rng.uniform(),
                            area[1] + (area[3] - area[1]) * self.rng.uniform(),
                        ]
                    });
                    let (dx, dy) = (target[0] - self.pos[0], target[1] - self.pos[1]);
                    let left = (dx * dx + dy * dy).sqrt();
                    let can = speed_mps * (t_ns - now) as f64 * 1e-9;
                    if can < left {
                        self.pos = [self.pos[0] + dx * can / left, self.pos[1] + dy * can / left];
                        moved += can;
                        now = t_ns;
                    } else {
                        self.pos = target;
                        moved += left;
                        now += (left / speed_mps * 1e9) as i64;
                        self.pause_until_ns = now + (pause_s * 1e9) as i64;
                        self.target = None;
                    }
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linear_ue_moves_at_its_speed_and_a_static_one_stays() {
        let mut m = Mover::new([10.0, 0.0], Mobility::Linear { speed_mps: 20.0, heading_deg: 90.0 }, Rng::new(1, "m"));
        assert!((m.advance_to(500_000_000) - 10.0).abs() < 1e-9);
        let p = m.position();
        assert!((p[0] - 10.0).abs() < 1e-9 && (p[1] - 10.0).abs() < 1e-9, "{p:?}");
        assert_eq!(m.advance_to(100), 0.0, "time does not go back");
        let mut s = Mover::new([3.0, 4.0], Mobility::Static, Rng::new(1, "m"));
        assert_eq!((s.advance_to(1_000_000_000), s.position()), (0.0, [3.0, 4.0]));
    }

    #[test]
    fn random_waypoints_stay_in_the_area_at_the_speed_and_are_seeded() {
        let area = [0.0, 0.0, 200.0, 100.0];
        let mk = |seed| {
            Mover::new(
                [50.0, 50.0],
                Mobility::RandomWaypoint { area, speed_mps: 5.0, pause_s: 1.0 },
                Rng::new(seed, "rw"),
            )
        };
        let (mut a, mut b, mut c) = (mk(3), mk(3), mk(4));
        let mut moved = 0.0;
        for k in 1..=6000 {
            let t = k * 10_000_000;
            moved += a.advance_to(t);
            b.advance_to(t);
            c.advance_to(t);
            let p = a.position();
            assert!(p[0] >= 0.0 && p[0] <= 200.0 && p[1] >= 0.0 && p[1] <= 100.0, "{p:?}");
        }
        // 60 s at 5 m/s, less the pauses: between 150 m and 300 m.
        assert!(moved > 150.0 && moved <= 300.0 + 1e-6, "{moved}");
        assert_eq!(a.position(), b.position(), "same seed, same path");
        assert_ne!(a.position(), c.position());
    }
}
