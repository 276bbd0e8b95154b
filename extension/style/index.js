import './base.css';
import './schedules.css';
